"""Every code of why a job waits and why a node is down is checked by a test that makes it (by its
code, or the table holding it walked): a reason added without one fails here (issue 45)."""

from __future__ import annotations

import importlib
import re
from pathlib import Path

from catalogue import Text, read_data

ROOT = Path(__file__).resolve().parents[2]
DATA = ("clusters/texts.json", "scheduling/texts.json", "clusters/slurm/texts.json", "clusters/executors/texts.json")
TABLES = ("clusters.texts", "scheduling.texts", "clusters.slurm.texts")  # (modules holding tables of them)


def named_texts() -> dict[str, set[str]]:
    """Each code of the areas -> how a test may name it beside its code: the table holding it walked
    (`REASONS[`, `REASONS)`)."""
    found: dict[str, set[str]] = {code: set() for data in DATA for code in read_data(ROOT / data)}
    for name in TABLES:
        for attribute, value in vars(importlib.import_module(name)).items():
            if isinstance(value, dict):
                for text in value.values():
                    if isinstance(text, Text):
                        found.setdefault(text.code, set()).update({f"{attribute}[", f"{attribute})"})
    return found


def test_every_reason_code_is_made_by_a_test():
    tests = "\n".join(path.read_text() for path in (ROOT / "tests").rglob("*.py") if path != Path(__file__).resolve())
    # The tests' words read once into sets (a regex search of the 1.4 MB per code took 3 s): each
    # dotted name whole (a code within a longer one does not count), and each name followed by an
    # index or a closing parenthesis.
    words = set(re.findall(r"[\w.]+", tests))
    names = {"".join(use) for use in re.findall(r"\b(\w+)(\[|\))", tests)}
    unchecked = [
        code
        for code, named in sorted(named_texts().items())
        if not code.startswith("exit.")  # (how a task ended: tests/catalogue/test_codes_used.py)
        and code not in words
        and not named & names
    ]
    assert unchecked == []
