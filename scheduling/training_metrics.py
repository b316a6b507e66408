"""The sampler's duty that reads tasks' training metrics (jobs/protocol/metrics.py) into the
database: each pass, the new whole lines of each running task's stdout log (PAI_METRIC lines) and
of its $PAI_METRICS_FILE, and the rest of the runs that ended since the last pass (TaskAttempt
rows, as the usage roll-up finds them).

Each file is read from where the last read stopped (MetricSource: its path and offset), at most
READ_BYTES a pass, so a task that prints fast costs every pass the same and the scheduler nothing
(the sampler is a process of its own). The metrics file lies in the task's work dir, which the
task writes: it is read through clusters.userfs (no link followed). A log cut to its cap
(clusters/executors/logcap.py) is read again from its start, its steps already read skipped. A
job keeps at most PAI_METRICS_MAX_POINTS points; those past it are dropped and counted, as bad
lines are; neither ever stops a read. TensorBoard event files in a job's log folders (its
`tensorboard` plugin's logdir, else a v1 outputDir) are read too (scheduling/event_metrics.py),
their scalars credited to the job's first task.
"""

from __future__ import annotations

import functools
import logging
import os
import time
from collections import defaultdict
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

from django.conf import settings
from django.db import connection, models, transaction
from django.db.models import Sum

from clusters import job_files, userfs
from clusters.executors.logcap import STDOUT, stream_log_path
from jobs.models import MetricPoint, MetricSeries, MetricSource, Task, TaskAttempt, TaskState
from jobs.protocol.metrics import METRICS_FILE_NAME, Point, read_lines
from scheduling.event_files import EventFiles
from scheduling.event_metrics import event_reads

log = logging.getLogger("pai.sampler")

READ_BYTES = 1024 * 1024  # of each file, each pass
TRANSACTION_POINTS = 2000  # about, written in one transaction (a task's points of a pass are never split)


Opener = Callable[[str], BinaryIO]
PointRow = tuple[int, int, str, int, float, int]  # job, task, name, step, value, read at


@dataclass(frozen=True)
class Run:
    """One run of a task to read: the task, and the log of that attempt."""

    task_id: int
    job_id: int
    role: str
    index: int
    log_path: str


@dataclass
class Read:
    """What one read of one source gave: its points (any), and whether its row must be written."""

    run: Run
    source: MetricSource
    points: list[Point]
    changed: bool


class MetricReader:
    """The sampler's duty (`read`); remembers the last ended run it read (a new sampler starts
    with the runs ending from then on, as the usage roll-up does)."""

    def __init__(self) -> None:
        self._ended_after: int | None = None
        self.event_files = EventFiles()  # (open from pass to pass: each goes on where it stopped)

    def read(self) -> int:
        """One pass; returns how many points were stored."""
        if self._ended_after is None:
            self._ended_after = TaskAttempt.objects.order_by("-pk").values_list("pk", flat=True).first() or 0
        runs, self._ended_after = runs_to_read(self._ended_after)
        return read_runs(runs, time.time(), self.event_files)


def runs_to_read(ended_after: int) -> tuple[list[Run], int]:
    """The runs that ended since the TaskAttempt id `ended_after` (their last lines), oldest first,
    then the running ones; and the id to start from next time."""
    ended = list(
        TaskAttempt.objects.filter(pk__gt=ended_after)
        .order_by("pk")
        .values_list("pk", "job_id", "role", "index", "log_path")
    )
    last = max((row[0] for row in ended), default=ended_after)
    task_ids = {
        (job_id, role, index): pk
        for pk, job_id, role, index in Task.objects.filter(job_id__in={row[1] for row in ended}).values_list(
            "pk", "job_id", "role", "index"
        )
    }
    runs = [
        Run(task_ids[(job_id, role, index)], job_id, role, index, log_path)
        for _, job_id, role, index, log_path in ended
        if (job_id, role, index) in task_ids
    ]
    running = Task.objects.filter(state=TaskState.RUNNING).values_list("pk", "job_id", "role", "index", "log_path")
    runs += [Run(*row) for row in running]
    return runs, last


def read_runs(runs: list[Run], now: float, event_files: EventFiles | None = None) -> int:
    if not runs:
        if event_files is not None:
            event_files.keep_only(set())
        return 0
    sources = {
        (source.task_id, source.kind): source
        for source in MetricSource.objects.filter(task_id__in={run.task_id for run in runs})
    }
    read: list[Read] = []
    with userfs.opened_root(_tasks_root()) as work_root:
        for run in runs:
            if run.log_path:
                log_path = str(stream_log_path(run.log_path, STDOUT))
                read.append(_read(run, sources, MetricSource.Kind.LOG, log_path, _open_log))
            relative = f"{job_files.job_dir_name(run.job_id)}/{run.role}-{run.index}/{METRICS_FILE_NAME}"
            read.append(
                _read(run, sources, MetricSource.Kind.FILE, relative, lambda path: userfs.open_file(work_root, path))
            )
        if event_files is not None:
            found = event_reads({run.job_id for run in runs}, event_files, work_root)
            read += [Read(Run(e.task_id, e.job_id, "", 0, ""), e.source, e.points, e.changed) for e in found]
    return _store([entry for entry in read if entry.changed], now)


def _tasks_root() -> Path:
    root = job_files.work_root(job_files.TASKS)
    root.mkdir(parents=True, exist_ok=True)
    return root


def _open_log(path: str) -> BinaryIO:
    """A task's log: the portal's own file, below its own folder (logcap makes them 0600)."""
    return open(path, "rb")


def _read(run: Run, sources: dict[tuple[int, str], MetricSource], kind: str, path: str, opener: Opener) -> Read:
    source = sources.get((run.task_id, kind))
    if source is None:
        source = sources[(run.task_id, kind)] = MetricSource(task_id=run.task_id, kind=kind, path=path)
    before = (source.path, source.offset, source.next_step, source.bad_lines)
    if source.path != path:  # the log of a new attempt: from its start, steps anew
        source.path, source.offset, source.next_step = path, 0, 0
    skip_below = 0
    try:
        with opener(path) as file:
            if os.fstat(file.fileno()).st_size < source.offset:  # a log cut at its cap: again, new steps only
                skip_below, source.offset = source.next_step, 0
            file.seek(source.offset)
            data = file.read(READ_BYTES)
    except (FileNotFoundError, userfs.NotFound):
        data = b""
    except (OSError, userfs.UserFsError) as error:  # a link, a folder: the task's doing, never fatal
        log.info("metrics of task %s not read from %s: %s", run.task_id, path, error)
        data = b""
    reading = read_lines(data, marked=kind == MetricSource.Kind.LOG, next_step=source.next_step)
    source.offset += reading.consumed
    source.next_step = reading.next_step
    source.bad_lines += reading.bad_lines
    points = [point for point in reading.points if point.step >= skip_below]
    changed = source.pk is None or before != (source.path, source.offset, source.next_step, source.bad_lines)
    return Read(run, source, points, changed)


def _store(read: list[Read], now: float) -> int:
    """The points within each job's cap, their series and the sources' offsets: a task's points in
    the same transaction as the offsets they came from (a crash reads them again: a step read
    again replaces its value), a transaction about every TRANSACTION_POINTS points (the one
    writer of SQLite is held a few milliseconds at a time, not for a whole pass's points)."""
    if not read:
        return 0
    job_ids = {entry.run.job_id for entry in read if entry.points}
    held = dict(
        MetricSeries.objects.filter(job_id__in=job_ids)
        .values("job_id")
        .annotate(points=Sum("points"))
        .values_list("job_id", "points")
    )
    room = {job_id: settings.PAI_METRICS_MAX_POINTS - (held.get(job_id) or 0) for job_id in job_ids}
    at = int(now)
    stored = 0
    for chunk in _transactions(read):
        rows: dict[tuple[int, str, int], PointRow] = {}
        for entry in chunk:
            run, source, points = entry.run, entry.source, entry.points
            kept = points[: max(0, room.get(run.job_id, 0))]
            if len(kept) < len(points):
                source.dropped += len(points) - len(kept)
            room[run.job_id] = room.get(run.job_id, 0) - len(kept)
            job_id, task_id = run.job_id, run.task_id
            for step, name, value in kept:
                rows[(task_id, name, step)] = (job_id, task_id, name, step, value, at)
        with transaction.atomic():
            if rows:
                with connection.cursor() as cursor:
                    cursor.executemany(_sql().insert_points, list(rows.values()))
            _summarize(list(rows.values()))
            _save_sources([entry.source for entry in chunk])
        stored += len(rows)
    return stored


def _transactions(read: list[Read]) -> Iterator[list[Read]]:
    """The reads in groups of about TRANSACTION_POINTS points, a task's reads in one group (a step
    it reported twice in one pass counts once), in the order they were read."""
    by_task: dict[int, list[Read]] = defaultdict(list)
    for entry in read:
        by_task[entry.run.task_id].append(entry)
    chunk: list[Read] = []
    points = 0
    for entries in by_task.values():
        size = sum(len(entry.points) for entry in entries)
        if chunk and points + size > TRANSACTION_POINTS:
            yield chunk
            chunk, points = [], 0
        chunk += entries
        points += size
    if chunk:
        yield chunk


def _save_sources(sources: list[MetricSource]) -> None:
    MetricSource.objects.bulk_create([source for source in sources if source.pk is None])
    saved = [
        (source.path, source.offset, source.next_step, source.bad_lines, source.dropped, source.pk)
        for source in sources
        if source.pk is not None
    ]
    if saved:
        with connection.cursor() as cursor:
            cursor.executemany(_sql().update_source, saved)


def _summarize(rows: list[PointRow]) -> None:
    """Each (job, name)'s series, updated by the points just written (in the order they were read:
    the last value is the one at the highest step, the newest of a tie). A few series a pass: model
    objects, written by one statement."""
    if not rows:
        return
    by_series: dict[tuple[int, str], list[PointRow]] = defaultdict(list)
    for row in rows:
        by_series[(row[0], row[2])].append(row)
    existing = {
        (series.job_id, series.name): series
        for series in MetricSeries.objects.filter(
            job_id__in={job_id for job_id, _ in by_series}, name__in={name for _, name in by_series}
        )
    }
    created = []
    for key, new in by_series.items():
        series = existing.get(key)
        if series is None:
            _, _, _, step, value, _ = new[0]
            series = MetricSeries(job_id=key[0], name=key[1], last_step=step, last_value=value)
            series.min_value = series.max_value = value
            created.append(series)
        series.points += len(new)
        values = [row[4] for row in new]
        series.min_value = min(series.min_value, *values)
        series.max_value = max(series.max_value, *values)
        for _, _, _, step, value, _ in new:
            if step >= series.last_step:
                series.last_step, series.last_value = step, value
    MetricSeries.objects.bulk_create(created)
    updated = [
        (series.points, series.last_step, series.last_value, series.min_value, series.max_value, series.pk)
        for key, series in existing.items()
        if key in by_series
    ]
    if updated:
        with connection.cursor() as cursor:
            cursor.executemany(_sql().update_series, updated)


@dataclass(frozen=True)
class _Statements:
    insert_points: str
    update_source: str
    update_series: str


@functools.cache
def _sql() -> _Statements:
    """The writes as plain SQL (values tuples, no model object per point), quoted for the database
    in use; an upsert (`ON CONFLICT ... DO UPDATE`) as SQLite and PostgreSQL both say it."""
    q = connection.ops.quote_name

    def columns(model: type[models.Model], *names: str) -> list[str]:
        column = {field.name: field.column for field in model._meta.concrete_fields}
        return [q(column[name]) for name in names]

    point = columns(MetricPoint, "job", "task", "name", "step", "value", "at")
    key = ", ".join(columns(MetricPoint, "task", "name", "step"))
    value, at = columns(MetricPoint, "value", "at")
    source = columns(MetricSource, "path", "offset", "next_step", "bad_lines", "dropped")
    series = columns(MetricSeries, "points", "last_step", "last_value", "min_value", "max_value")
    # (Only names from the models, quoted: no value is ever in the text.)
    points_table, source_table, series_table = (q(m._meta.db_table) for m in (MetricPoint, MetricSource, MetricSeries))
    return _Statements(
        insert_points=(
            f"INSERT INTO {points_table} ({', '.join(point)}) VALUES ({', '.join(['%s'] * 6)}) "  # noqa: S608
            f"ON CONFLICT ({key}) DO UPDATE SET {value} = excluded.{value}, {at} = excluded.{at}"
        ),
        update_source=f"UPDATE {source_table} SET {_assign(source)} WHERE {q('id')} = %s",  # noqa: S608
        update_series=f"UPDATE {series_table} SET {_assign(series)} WHERE {q('id')} = %s",  # noqa: S608
    )


def _assign(columns: list[str]) -> str:
    return ", ".join(f"{column} = %s" for column in columns)
