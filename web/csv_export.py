"""The job list and a job's task table as CSV (issue 36), streamed, safe to open in a spreadsheet:
a cell starting with = + - @ (or a tab or carriage return) would run as a formula there, so it gets
a leading ' (OWASP's advice). Job names, reasons and node names are the users' own text.

The served portal makes a streamed answer piece by piece on whichever piece thread is free
(pai_portal/serving.py), each with its own database connection: rows come `in_pages`, never from a
cursor held open between pieces."""

from __future__ import annotations

import csv
from collections.abc import Iterable, Iterator
from typing import Any, TypeVar

from django.db.models import Model, QuerySet

Row = TypeVar("Row", bound=Model)
PAGE_ROWS = 500

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


def in_pages(rows: QuerySet[Row], size: int = PAGE_ROWS) -> Iterator[Row]:
    """The queryset's rows in its order: their keys first, then `size` rows a query, each query
    read whole (a row gone meanwhile is left out)."""
    keys = list(rows.values_list("pk", flat=True))
    for start in range(0, len(keys), size):
        page = keys[start : start + size]
        found = {row.pk: row for row in rows.filter(pk__in=page)}
        yield from (found[key] for key in page if key in found)
