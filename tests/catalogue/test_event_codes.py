"""Every code of a job's timeline (jobs.texts' `event.*`) is written by some event of the portal's:
an event no longer written leaves no code behind (issue 45)."""

from __future__ import annotations

import re
from pathlib import Path

from catalogue import Text
from jobs import texts

ROOT = Path(__file__).resolve().parents[2]


def test_every_event_code_is_written_by_an_event():
    sources = "\n".join(
        path.read_text() for package in ("jobs", "scheduling") for path in (ROOT / package).rglob("*.py")
    )
    event_texts = {name: text for name, text in vars(texts).items() if isinstance(text, Text)}
    unwritten = [
        text.code
        for name, text in event_texts.items()
        if text.code.startswith("event.") and not re.search(rf"\btexts\.{name}\b|\bimport\b[^\n]*\b{name}\b", sources)
    ]
    assert unwritten == []
