"""Every code of why a job waits and why a node is down is checked by a test that makes it (by its
code, or its Text's name): a reason added without one fails here (issue 45)."""

from __future__ import annotations

import importlib
import re
from pathlib import Path

from catalogue import Text

ROOT = Path(__file__).resolve().parents[2]
MODULES = ("clusters.texts", "scheduling.texts", "clusters.slurm.texts", "clusters.executors.texts")


def named_texts() -> dict[str, tuple[str, ...]]:
    """Each code of the modules -> how a test names it beside its code: its Text called or asked its
    code (`QUOTA_GPU(`, `QUOTA_GPU.code`), or the table holding it walked (`REASONS[`, `REASONS)`)."""
    found: dict[str, tuple[str, ...]] = {}
    for name in MODULES:
        module = importlib.import_module(name)
        for attribute, value in vars(module).items():
            if isinstance(value, Text):
                found[value.code] = (*found.get(value.code, ()), rf"\b{attribute}(\(|\.code\b)")
            elif isinstance(value, dict):
                for text in value.values():
                    if isinstance(text, Text):
                        found[text.code] = (*found.get(text.code, ()), rf"\b{attribute}(\[|\))")
    return found


def test_every_reason_code_is_made_by_a_test():
    tests = "\n".join(path.read_text() for path in (ROOT / "tests").rglob("*.py") if path != Path(__file__).resolve())
    unchecked = [
        code
        for code, names in sorted(named_texts().items())
        if not code.startswith("exit.")  # (how a task ended: tests/catalogue/test_exit_codes.py)
        and not re.search(rf"(?<![\w.]){re.escape(code)}(?![\w.])", tests)
        and not any(re.search(pattern, tests) for pattern in names)
    ]
    assert unchecked == []
