"""The job list and a job's task table as CSV (issue 36), streamed, safe to open in a spreadsheet:
a cell starting with = + - @ (or a tab or carriage return) would run as a formula there, so it gets
a leading ' (OWASP's advice). Job names, reasons and node names are the users' own text."""

from __future__ import annotations

import csv
from collections.abc import Iterable, Iterator
from typing import Any

FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


def safe_cell(value: Any) -> str:
    text = "" if value is None else str(value)
    return f"'{text}" if text.startswith(FORMULA_STARTS) else text


class _Line:
    """A file-like the csv writer writes one line into."""

    def write(self, text: str) -> str:
        return text


def csv_lines(header: list[str], rows: Iterable[Iterable[Any]]) -> Iterator[str]:
    writer = csv.writer(_Line())
    yield "\ufeff" + writer.writerow([safe_cell(cell) for cell in header])  # the BOM: Excel reads UTF-8
    for row in rows:
        yield writer.writerow([safe_cell(cell) for cell in row])
