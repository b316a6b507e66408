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
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Generic, TypeVar, cast

from django.core.exceptions import EmptyResultSet
from django.db import DatabaseError, connections, transaction
from django.db.models import Model, QuerySet, Value, signals
from django.db.models import query as django_query
from django.db.models.query import FlatValuesListIterable, ModelIterable, ValuesListIterable
from django.db.models.sql import InsertQuery, UpdateQuery

T = TypeVar("T")
DB = "default"

# Marker values: what an argument of each type is while the SQL is compiled, in two families (the
# SQL is compiled with each: what differs between the two is an argument's). Each must come out of
# Django's preparation unchanged: an int in the range of every integer field (a lookup out of its
# field's range is no SQL at all in Django 5).
_MARKERS: dict[type, Callable[[int, int], Any]] = {
    str: lambda family, number: f"\x00prepared-argument-{family}-{number}\x00",
    int: lambda family, number: (31_337, 30_103)[family] - number,
}

# The longest list argument run by compiled SQL: a list is compiled once per size bucket (1, 2, 4,
# ... LIST_MOST values); a longer one is Django's to build each time.
LIST_MOST = 1024


@dataclass(frozen=True)
class ListOf:
    """An argument that is a list of `kind` values, for an `__in` lookup: `Prepared(lambda ids:
    Task.objects.filter(pk__in=ids), ListOf(int))`. Its SQL is compiled once per size bucket, the
    list filled to its bucket with its last value (which changes nothing an IN list means). An empty
    list is a bucket of its own (where Django makes no SQL of the whole query, none is run); one
    longer than LIST_MOST is run by Django's own queryset."""

    kind: type


ArgumentType = type | ListOf


Slots = tuple[tuple[int, int], ...]  # (parameter position, value index among the flattened arguments)
Compiling = Callable[[int], tuple[str, Sequence[Any], list[Any]]]  # family -> (SQL, parameters, its markers)


@dataclass(frozen=True)
class _Compiled:
    sql: str
    params: tuple[Any, ...]
    slots: Slots
    rows_to_results: Callable[[list[Any]], list[Any]]


class _Arguments:
    """The arguments of compiled SQL: what each is while compiling (markers), the size bucket each
    list argument is compiled for, and a call's values flattened in the markers' order."""

    def __init__(self, argument_types: tuple[ArgumentType, ...]) -> None:
        self.types = argument_types

    def bound(self, args: tuple[Any, ...]) -> tuple[tuple[int, ...], list[Any]] | None:
        """(each list argument's bucket, the call's values flattened in the markers' order: each
        list's distinct values filled to its bucket with the last); None for a list too long,
        Django's to run."""
        sizes: list[int] = []
        flat: list[Any] = []
        for kind, value in zip(self.types, args, strict=True):
            if isinstance(kind, ListOf):
                distinct = list(dict.fromkeys(value))
                if len(distinct) > LIST_MOST:
                    return None
                sizes.append(1 << (len(distinct) - 1).bit_length() if distinct else 0)
                flat.extend(distinct + distinct[-1:] * (sizes[-1] - len(distinct)))
            else:
                flat.append(value)
        return tuple(sizes), flat

    def markers(self, sizes: tuple[int, ...], family: int) -> tuple[list[Any], list[Any]]:
        """(the arguments to build the queryset with, every marker in order)."""
        built: list[Any] = []
        flat: list[Any] = []
        lists = iter(sizes)
        for kind in self.types:
            if isinstance(kind, ListOf):
                markers = [_MARKERS[kind.kind](family, len(flat) + number) for number in range(next(lists))]
                built.append(markers)
                flat.extend(markers)
            else:
                built.append(_MARKERS[kind](family, len(flat)))
                flat.append(built[-1])
        return built, flat

    @staticmethod
    def slots(compile_with: Compiling) -> tuple[str, tuple[Any, ...], Slots]:
        """(SQL, parameters, slots) of `compile_with(family)` -> (its SQL, its parameters, every
        marker of the family in order), compiled with both families: an argument's slots are the
        parameters that are its marker in each; the rest must be the same in both (so a constant
        that happens to equal a marker is never taken for an argument)."""
        (sql, params, flat), (other_sql, other_params, other_flat) = compile_with(0), compile_with(1)
        if sql != other_sql or len(params) != len(other_params):
            raise ValueError("the arguments must reach the SQL as parameters, as given")
        slots: list[tuple[int, int]] = []
        for index, (marker, other) in enumerate(zip(flat, other_flat, strict=True)):
            found = [at for at, param in enumerate(params) if param == marker and other_params[at] == other]
            if not found:
                raise ValueError(f"argument {index} must reach the SQL as parameters, as given")
            slots.extend((position, index) for position in found)
        taken = {position for position, _ in slots}
        if any(not _alike(param, other_params[at]) for at, param in enumerate(params) if at not in taken):
            raise ValueError("the arguments must reach the SQL as parameters, as given")
        return sql, tuple(params), tuple(slots)


def _alike(param: Any, other: Any) -> bool:
    """The same parameter in both compilations (psycopg's JSON wrappers have no equality of their own)."""
    return bool(param == other) or (type(param) is type(other) and hasattr(param, "obj") and param.obj == other.obj)


def _filled(params: tuple[Any, ...], slots: Slots, values: list[Any]) -> list[Any]:
    filled = list(params)
    for position, index in slots:
        filled[position] = values[index]
    return filled


class Prepared(Generic[T]):
    """`Prepared(lambda name, owner_id: Job.objects.filter(name=name, owner_id=owner_id), str, int)`
    then `read(name, owner_id)` -> a list, as `list(queryset)` gives. Each argument must reach the
    SQL as parameters, as given (a column's value: a string or an int, or a list of them as
    `ListOf(int)` for an `__in` lookup; never a model or a slice's bound); the queryset gives model
    instances or `values_list` rows."""

    def __init__(self, build: Callable[..., QuerySet[Any]], *argument_types: ArgumentType) -> None:
        self.build = build
        self.arguments = _Arguments(argument_types)
        self._compiled: dict[tuple[str, tuple[int, ...]], _Compiled] = {}  # by vendor and list sizes
        self._lock = threading.Lock()

    def __call__(self, *args: Any) -> list[T]:
        bound = self.arguments.bound(args)
        if bound is None:
            return list(self.build(*args))
        sizes, values = bound
        connection = connections[DB]
        compiled = self._compiled.get((connection.vendor, sizes)) or self._compile(connection.vendor, sizes)
        if not compiled.sql:
            return []  # (a lookup in an empty list: nothing to read)
        with connection.cursor() as cursor:
            cursor.execute(compiled.sql, _filled(compiled.params, compiled.slots, values))
            rows = cursor.fetchall()
        return compiled.rows_to_results(rows)

    def first(self, *args: Any) -> T | None:
        found = self(*args)
        return found[0] if found else None

    def _compile(self, vendor: str, sizes: tuple[int, ...]) -> _Compiled:
        compilers = []

        def compile_with(family: int) -> tuple[str, Sequence[Any], list[Any]]:
            built, flat = self.arguments.markers(sizes, family)
            queryset = self.build(*built)
            if queryset.db != DB or getattr(queryset, "_prefetch_related_lookups", None):
                raise ValueError("a Prepared read runs on the default database, without prefetch_related")
            compilers.append((queryset, queryset.query.get_compiler(using=DB)))
            return (*compilers[-1][1].as_sql(), flat)

        try:
            sql, params, slots = _Arguments.slots(compile_with)
        except EmptyResultSet:
            compiled = _Compiled("", (), (), lambda rows: rows)
        else:
            compiled = _Compiled(sql, params, slots, _results_of(*compilers[0]))
        with self._lock:
            self._compiled[vendor, sizes] = compiled
        return compiled


@dataclass(frozen=True)
class _CompiledUpdate:
    sql: str
    params: tuple[Any, ...]
    slots: Slots  # (the values' index: the arguments', then the set values')


class PreparedUpdate:
    """An UPDATE whose SQL Django compiles once per process: `PreparedUpdate(lambda job_id:
    Job.objects.filter(pk=job_id, state="WAITING"), int, sets=("state", "updated_at"))` then
    `update(job_id, state=..., updated_at=...)` -> the rows changed, as `queryset.update(...)`
    gives (each value prepared as Django prepares it: a model instance for a foreign key, None as
    NULL). `fixed`: values the same on every call, expressions included (`F("attempt") + 1`). The
    arguments are as `Prepared`'s; every name in `sets` is given on each call, and nothing else.
    Django built and compiled each UPDATE anew: 0.17 of its 0.19 ms of CPU (docs/performance.md)."""

    def __init__(
        self,
        build: Callable[..., QuerySet[Any]],
        *argument_types: ArgumentType,
        sets: tuple[str, ...],
        fixed: dict[str, Any] | None = None,
    ) -> None:
        self.build = build
        self.arguments = _Arguments(argument_types)
        self.sets = sets
        self.fixed = fixed or {}
        self._compiled: dict[tuple[str, tuple[int, ...]], _CompiledUpdate] = {}
        self._fields: list[Any] | None = None
        self._lock = threading.Lock()

    def __call__(self, *args: Any, **values: Any) -> int:
        if values.keys() != set(self.sets):
            raise TypeError(f"an update of {sorted(self.sets)}, given {sorted(values)}")
        bound = self.arguments.bound(args)
        if bound is None:
            return self.build(*args).update(**self.fixed, **values)
        sizes, arguments = bound
        connection: Any = connections[DB]
        compiled = self._compiled.get((connection.vendor, sizes)) or self._compile(connection.vendor, sizes)
        if not compiled.sql:
            return 0  # (a lookup in an empty list: no row to change)
        fields = self._fields or []
        prepared = [_save_value(field, values[name], connection) for field, name in zip(fields, self.sets, strict=True)]
        params = _filled(compiled.params, compiled.slots, arguments + prepared)
        with transaction.mark_for_rollback_on_error(using=DB), connection.cursor() as cursor:
            cursor.execute(compiled.sql, params)
            return int(cursor.rowcount)

    def _compile(self, vendor: str, sizes: tuple[int, ...]) -> _CompiledUpdate:
        models = []

        def compile_with(family: int) -> tuple[str, Sequence[Any], list[Any]]:
            built, flat = self.arguments.markers(sizes, family)
            set_markers = [_MARKERS[str](family, len(flat) + number) for number in range(len(self.sets))]
            queryset = self.build(*built)
            models.append(queryset.model)
            query = cast(UpdateQuery, queryset.query.chain(UpdateQuery))
            given = {name: Value(marker) for name, marker in zip(self.sets, set_markers, strict=True)}
            query.add_update_values({**self.fixed, **given})
            query.clear_select_clause()
            if queryset.db != DB or query.related_updates or query.order_by or query.is_sliced:
                raise ValueError("a PreparedUpdate changes one model's own rows on the default database, unordered")
            return (*query.get_compiler(using=DB).as_sql(), flat + set_markers)

        try:
            compiled = _CompiledUpdate(*_Arguments.slots(compile_with))
        except EmptyResultSet:
            compiled = _CompiledUpdate("", (), ())
        meta = models[0]._meta
        with self._lock:
            self._fields = [meta.get_field(name) for name in self.sets]
            self._compiled[vendor, sizes] = compiled
        return compiled


def _save_value(field: Any, value: Any, connection: Any) -> Any:
    """A value as Django's UPDATE prepares it (SQLUpdateCompiler.as_sql)."""
    if hasattr(value, "resolve_expression"):
        raise ValueError(f"{field.name}: an expression is compiled once, as one of `fixed`")
    if hasattr(value, "prepare_database_save"):
        if not field.remote_field:
            raise TypeError(f"Tried to update field {field} with a model instance, {value!r}")
        value = value.prepare_database_save(field)
    return field.get_db_prep_save(value, connection=connection)


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


M = TypeVar("M", bound=Model)


@dataclass(frozen=True)
class _CompiledInsert:
    head: str  # INSERT INTO ... VALUES
    row: str  # (%s, ...)
    tail: str  # RETURNING ... (or "")
    fields: tuple[Any, ...]
    returning: tuple[Any, ...]
    returning_params: tuple[Any, ...]
    converters: tuple[tuple[int, tuple[list[Callable[..., Any]], Any]], ...]


class PreparedInsert(Generic[M]):
    """New rows of one model, written by SQL Django compiles once per process. `insert(obj)` writes
    a new instance as `obj.save()` does (the same columns and values: each field's `pre_save` and
    `get_db_prep_save`, its primary key and other returned columns set back) and `insert_all(objs)`
    as `bulk_create(objs)` does. Django compiled each model's INSERT anew for every save: a fifth of
    a submit's CPU went there (docs/performance.md, issue 49).

    What `save()` does besides is kept where it applies: related objects saved first are checked
    (`_prepare_related_fields_for_save`), an error marks the atomic block for rollback. `save()`'s
    signals are not sent, so a model with pre_save or post_save receivers (or a parent model, a
    primary key given, a value that is an expression, a backend without RETURNING) is written by
    Django's own save or bulk_create instead. tests/robustness/test_prepared_reads.py holds the rows
    written to what Django writes."""

    def __init__(self, model: type[M]) -> None:
        self.model = model
        self._compiled: dict[str, _CompiledInsert | None] = {}
        self._lock = threading.Lock()

    def insert(self, obj: M) -> None:
        compiled = self._ready([obj])
        if compiled is None or _has_receivers(self.model):
            obj.save(force_insert=True)
            return
        cast(Any, obj)._prepare_related_fields_for_save(operation_name="save")
        params = _params(compiled, [obj])
        if params is None:
            obj.save(force_insert=True)
            return
        self._write(compiled, [obj], params)

    def insert_all(self, objs: list[M]) -> list[M]:
        compiled = self._ready(objs)
        if not objs or compiled is None:
            return self.model._default_manager.bulk_create(objs)
        for obj in objs:
            cast(Any, obj)._prepare_related_fields_for_save(operation_name="bulk_create")
        connection = connections[DB]
        size = max(connection.ops.bulk_batch_size(list(compiled.fields), objs), 1)
        batches = [objs[start : start + size] for start in range(0, len(objs), size)]
        params = [_params(compiled, batch) for batch in batches]
        if any(batch_params is None for batch_params in params):
            return self.model._default_manager.bulk_create(objs)
        with transaction.atomic(using=DB, savepoint=False):
            for batch, batch_params in zip(batches, params, strict=True):
                self._write(compiled, batch, batch_params or [])
        return objs

    def _ready(self, objs: list[M]) -> _CompiledInsert | None:
        """The compiled INSERT for this database, or None where Django's own path must write `objs`."""
        connection = connections[DB]
        if objs and connection.vendor not in self._compiled:
            self._compile(connection, objs[0])
        compiled = self._compiled.get(connection.vendor)
        if compiled is None or self.model._meta.pk.has_default() or any(cast(Any, obj)._is_pk_set() for obj in objs):
            return None
        return compiled

    def _write(self, compiled: _CompiledInsert, objs: list[M], params: list[Any]) -> None:
        connection: Any = connections[DB]
        sql = compiled.head + ", ".join([compiled.row] * len(objs)) + compiled.tail
        with transaction.mark_for_rollback_on_error(using=DB), connection.cursor() as cursor:
            cursor.execute(sql, params)
            if len(objs) > 1:
                rows = list(connection.ops.fetch_returned_insert_rows(cursor))
            else:
                rows = [connection.ops.fetch_returned_insert_columns(cursor, compiled.returning_params)]
        if len(rows) != len(objs):
            raise DatabaseError(f"{len(objs)} {self.model.__name__} rows written, {len(rows)} returned")
        for obj, row in zip(objs, rows, strict=True):
            values = list(row)
            for position, (functions, expression) in compiled.converters:
                for function in functions:
                    values[position] = function(values[position], expression, connection)
            for field, value in zip(compiled.returning, values, strict=True):
                setattr(obj, field.attname, value)
            obj._state.db = DB
            obj._state.adding = False

    def _compile(self, connection: Any, obj: M) -> None:
        compiled = _compiled_insert(self.model, connection, obj)
        with self._lock:
            self._compiled[connection.vendor] = compiled


def _has_receivers(model: type[Model]) -> bool:
    return signals.pre_save.has_listeners(model) or signals.post_save.has_listeners(model)


def _params(compiled: _CompiledInsert, objs: list[Any]) -> list[Any] | None:
    """The rows' values as Django's insert prepares them (SQLInsertCompiler.pre_save_val and
    prepare_value); None when one is an expression (Django's own path writes those)."""
    connection = connections[DB]
    params: list[Any] = []
    for obj in objs:
        for field in compiled.fields:
            value = field.pre_save(obj, True)
            if hasattr(value, "resolve_expression"):
                return None
            params.append(field.get_db_prep_save(value, connection=connection))
    return params


def _compiled_insert(model: type[Model], connection: Any, obj: Model) -> _CompiledInsert | None:
    """The model's INSERT of one row as Django compiles it for `obj`, cut where its row of
    placeholders is; None for what it would not give the same way for every instance."""
    meta = model._meta
    fields: list[Any] = [
        field for field in meta.local_concrete_fields if not field.generated and field is not meta.auto_field
    ]
    returning = list(meta.db_returning_fields)
    features = connection.features
    if meta.parents or meta.proxy or meta.order_with_respect_to or meta.auto_field is None:
        return None
    if not (features.can_return_rows_from_bulk_insert and features.can_return_columns_from_insert):
        return None
    if any(hasattr(field, "get_placeholder") or field.has_db_default() for field in fields):
        return None
    query = InsertQuery(model)
    query.insert_values(fields, [obj])
    compiler = query.get_compiler(using=DB)
    compiler.returning_fields = returning
    ((sql, params),) = compiler.as_sql()
    row = "(" + ", ".join(["%s"] * len(fields)) + ")"
    head, found, tail = sql.rpartition(row)
    if not found or len(params) != len(fields) or " VALUES " not in head or "%s" in head + tail:
        return None
    converters = tuple(compiler.get_converters([field.get_col(meta.db_table) for field in returning]).items())
    return _CompiledInsert(
        head, row, tail, tuple(fields), tuple(returning), tuple(compiler.returning_params), converters
    )
