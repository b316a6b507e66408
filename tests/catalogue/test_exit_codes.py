"""Every code of an exit's diagnostics (`exit.*`, in the texts.py of the areas that end tasks and
jobs) is written by some producer: a way of ending no longer written leaves no code behind (issue 45)."""

from __future__ import annotations

import re
from pathlib import Path

from catalogue import Text
from clusters.executors import texts as executor_texts
from clusters.slurm import texts as slurm_texts
from jobs import texts as job_texts
from jobs.protocol import texts as protocol_texts
from scheduling import texts as scheduling_texts

ROOT = Path(__file__).resolve().parents[2]
MODULES = (protocol_texts, job_texts, scheduling_texts, executor_texts, slurm_texts)


def exit_texts() -> dict[str, str]:
    """Each exit code -> the name its module gives it (a table's name for the codes in it)."""
    found: dict[str, str] = {}
    for module in MODULES:
        for name, value in vars(module).items():
            texts = value.values() if isinstance(value, dict) else [value]
            found |= {text.code: name for text in texts if isinstance(text, Text) and text.code.startswith("exit.")}
    return found


def test_every_exit_code_is_written_by_a_producer():
    sources = "\n".join(
        path.read_text()
        for package in ("jobs", "scheduling", "clusters")
        for path in (ROOT / package).rglob("*.py")
        if path.name != "texts.py"
    )
    unwritten = [
        code
        for code, name in sorted(exit_texts().items())
        if not re.search(rf"\btexts\.{name}\b|\bt\.{name}\b|\bimport\b[^\n]*\b{name}\b", sources)
    ]
    assert unwritten == []
