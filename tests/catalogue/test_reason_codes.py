"""Every code of why a job waits and why a node is down is checked by a test that makes it (by its
code, or its Text's name): a reason added without one fails here (issue 45)."""

from __future__ import annotations

import importlib
import re
from pathlib import Path

from catalogue import Text

ROOT = Path(__file__).resolve().parents[2]
MODULES = ("clusters.texts", "scheduling.texts", "clusters.slurm.texts", "clusters.executors.texts")


def named_texts() -> dict[str, set[str]]:
    """Each code of the modules -> how a test names it beside its code: its Text called or asked its
    code (`QUOTA_GPU(`, `QUOTA_GPU.code`), or the table holding it walked (`REASONS[`, `REASONS)`)."""
    found: dict[str, set[str]] = {}
    for name in MODULES:
        module = importlib.import_module(name)
        for attribute, value in vars(module).items():
            if isinstance(value, Text):
                found.setdefault(value.code, set()).update({f"{attribute}(", f"{attribute}.code"})
            elif isinstance(value, dict):
                for text in value.values():
                    if isinstance(text, Text):
                        found.setdefault(text.code, set()).update({f"{attribute}[", f"{attribute})"})
    return found


def test_every_reason_code_is_made_by_a_test():
    tests = "\n".join(path.read_text() for path in (ROOT / "tests").rglob("*.py") if path != Path(__file__).resolve())
    # The tests' words read once into sets (a regex search of the 1.4 MB per code took 3 s): each
    # dotted name whole (a code within a longer one does not count), and each name followed by a
    # call, an index, a closing parenthesis or `.code`.
    words = set(re.findall(r"[\w.]+", tests))
    names = {"".join(use) for use in re.findall(r"\b(\w+)(\(|\[|\)|\.code\b)", tests)}
    unchecked = [
        code
        for code, named in sorted(named_texts().items())
        if not code.startswith("exit.")  # (how a task ended: tests/catalogue/test_exit_codes.py)
        and code not in words
        and not named & names
    ]
    assert unchecked == []
