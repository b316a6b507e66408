"""Reads whose SQL Django compiles once per process (`Prepared`), for the requests every client
makes all the time: the API token on every request, a job's detail.

Django builds and compiles a queryset's SQL anew each time it runs: for those reads that was most
of their CPU (a job's row with its owner and VC: 1.0 of its 1.4 ms; the database's own part
0.1 ms). A `Prepared` read compiles its queryset once, with a marker value for each argument,
finds where each marker lands among the SQL's parameters, and from then on runs that SQL with the
arguments in their places, turning rows into what the queryset itself gives (model instances with
their `select_related` objects, or `values_list` tuples) by the same converters and populators
Django's own iterables use. tests/robustness/test_prepared_reads.py holds each read here to its queryset's
own answer, so a Django upgrade that changes those internals fails there, not in production.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from django.db import connections
from django.db.models import QuerySet
from django.db.models import query as django_query
from django.db.models.query import FlatValuesListIterable, ModelIterable, ValuesListIterable

T = TypeVar("T")
DB = "default"

# Marker values: what an argument of each type is while the SQL is compiled. Each must come out
# of Django's preparation unchanged and appear nowhere else in the query.
_MARKERS: dict[type, Callable[[int], Any]] = {
    str: lambda number: f"\x00prepared-argument-{number}\x00",
    int: lambda number: -7_355_608_000_000_000_000 - number,
}


@dataclass(frozen=True)
class _Compiled:
    sql: str
    params: tuple[Any, ...]
    slots: tuple[tuple[int, int], ...]  # (parameter position, argument index)
    rows_to_results: Callable[[list[Any]], list[Any]]


class Prepared(Generic[T]):
    """`Prepared(lambda name, owner_id: Job.objects.filter(name=name, owner_id=owner_id), str, int)`
    then `read(name, owner_id)` -> a list, as `list(queryset)` gives. Each argument must reach the
    SQL as parameters, as given (a column's value: a string or an int, never a model, a list or a
    slice's bound); the queryset gives model instances or `values_list` rows."""

    def __init__(self, build: Callable[..., QuerySet[Any]], *argument_types: type) -> None:
        self.build = build
        self.argument_types = argument_types
        self._compiled: dict[str, _Compiled] = {}  # by the database's vendor
        self._lock = threading.Lock()

    def __call__(self, *args: Any) -> list[T]:
        connection = connections[DB]
        compiled = self._compiled.get(connection.vendor) or self._compile(connection.vendor)
        params = list(compiled.params)
        for position, index in compiled.slots:
            params[position] = args[index]
        with connection.cursor() as cursor:
            cursor.execute(compiled.sql, params)
            rows = cursor.fetchall()
        return compiled.rows_to_results(rows)

    def first(self, *args: Any) -> T | None:
        found = self(*args)
        return found[0] if found else None

    def _compile(self, vendor: str) -> _Compiled:
        markers = [_MARKERS[kind](number) for number, kind in enumerate(self.argument_types)]
        queryset = self.build(*markers)
        if queryset.db != DB or getattr(queryset, "_prefetch_related_lookups", None):
            raise ValueError("a Prepared read runs on the default database, without prefetch_related")
        compiler = queryset.query.get_compiler(using=DB)
        sql, params = compiler.as_sql()
        slots: list[tuple[int, int]] = []
        for index, marker in enumerate(markers):
            found = [position for position, param in enumerate(params) if param == marker]
            if not found or str(marker).strip("\x00") in sql:
                raise ValueError(f"argument {index} must reach the SQL as parameters, as given")
            slots.extend((position, index) for position in found)
        compiled = _Compiled(sql, tuple(params), tuple(slots), _results_of(queryset, compiler))
        with self._lock:
            self._compiled[vendor] = compiled
        return compiled


def _results_of(queryset: QuerySet[Any], compiler: Any) -> Callable[[list[Any]], list[Any]]:
    """Rows -> what the queryset yields, as Django's ModelIterable / ValuesListIterable make it."""
    fields = [column[0] for column in compiler.select[0 : compiler.col_count]]
    converters = list(compiler.get_converters(fields).items())

    def converted(rows: list[Any]) -> list[Any]:
        """Each value as the database's and the field's converters make it (SQLCompiler.apply_converters,
        with this thread's connection)."""
        if not converters:
            return rows
        connection = connections[DB]
        found = []
        for row in map(list, rows):
            for position, (functions, expression) in converters:
                value = row[position]
                for function in functions:
                    value = function(value, expression, connection)
                row[position] = value
            found.append(row)
        return found

    iterable = queryset._iterable_class
    if iterable is FlatValuesListIterable:
        return lambda rows: [row[0] for row in converted(rows)]
    if iterable is ValuesListIterable:
        query = queryset.query
        names = [*query.extra_select, *query.values_select, *query.annotation_select]
        if list(getattr(queryset, "_fields", None) or names) != names:
            raise ValueError("values_list with annotations out of their order is not supported")
        return lambda rows: [tuple(row) for row in converted(rows)]
    if iterable is not ModelIterable or getattr(queryset, "_known_related_objects", None):
        raise ValueError("a Prepared read gives model instances or values_list rows")
    select, klass_info, annotation_col_map = compiler.select, compiler.klass_info, compiler.annotation_col_map
    model = klass_info["model"]
    start, end = klass_info["select_fields"][0], klass_info["select_fields"][-1] + 1
    init_list = [column[0].target.attname for column in select[start:end]]
    populators = django_query.get_related_populators(klass_info, select, DB)  # type: ignore[attr-defined]

    def instances(rows: list[Any]) -> list[Any]:
        found = []
        for row in converted(rows):
            instance = model.from_db(DB, init_list, row[start:end])
            for populator in populators:
                populator.populate(row, instance)
            for name, position in (annotation_col_map or {}).items():
                setattr(instance, name, row[position])
            found.append(instance)
        return found

    return instances
