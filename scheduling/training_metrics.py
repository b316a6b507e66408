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
lines are; neither ever stops a read. TensorBoard event files below a job's outputDir are read
too (scheduling/event_metrics.py), their scalars credited to the job's first task.
"""

from __future__ import annotations

import logging
import os
import time
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

from django.conf import settings
from django.db import transaction
from django.db.models import Sum

from clusters import job_files, userfs
from clusters.executors.logcap import STDOUT, stream_log_path
from jobs.models import MetricPoint, MetricSeries, MetricSource, Task, TaskAttempt, TaskState
from jobs.protocol.metrics import METRICS_FILE_NAME, Point, read_lines
from scheduling.event_files import EventFiles
from scheduling.event_metrics import event_reads

log = logging.getLogger("pai.sampler")

READ_BYTES = 1024 * 1024  # of each file, each pass


Opener = Callable[[str], BinaryIO]


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
        found = event_reads({run.job_id for run in runs}, event_files)
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
    """The points within each job's cap, their series and the sources' offsets, in one transaction
    (a crash reads them again: a step read again replaces its value)."""
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
    rows: dict[tuple[int, str, int], MetricPoint] = {}
    for entry in read:
        run, source, points = entry.run, entry.source, entry.points
        kept = points[: max(0, room.get(run.job_id, 0))]
        if len(kept) < len(points):
            source.dropped += len(points) - len(kept)
        room[run.job_id] = room.get(run.job_id, 0) - len(kept)
        for point in kept:
            rows[(run.task_id, point.name, point.step)] = MetricPoint(
                job_id=run.job_id, task_id=run.task_id, name=point.name, step=point.step, value=point.value, at=int(now)
            )
    with transaction.atomic():
        MetricPoint.objects.bulk_create(
            list(rows.values()),
            batch_size=1000,
            update_conflicts=True,
            unique_fields=["task", "name", "step"],
            update_fields=["value", "at"],
        )
        _summarize(list(rows.values()))
        sources = [entry.source for entry in read]
        MetricSource.objects.bulk_create([source for source in sources if source.pk is None])
        MetricSource.objects.bulk_update(
            [source for source in sources if source.pk is not None],
            ["path", "offset", "next_step", "bad_lines", "dropped"],
            batch_size=500,
        )
    return len(rows)


def _summarize(points: list[MetricPoint]) -> None:
    """Each (job, name)'s series, updated by the points just written (in the order they were read:
    the last value is the one at the highest step, the newest of a tie)."""
    if not points:
        return
    by_series: dict[tuple[int, str], list[MetricPoint]] = defaultdict(list)
    for point in points:
        by_series[(point.job_id, point.name)].append(point)
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
            first = new[0]
            series = MetricSeries(
                job_id=key[0], name=key[1], last_step=first.step, last_value=first.value, min_value=first.value,
                max_value=first.value,
            )  # fmt: skip
            created.append(series)
        series.points += len(new)
        for point in new:
            series.min_value = min(series.min_value, point.value)
            series.max_value = max(series.max_value, point.value)
            if point.step >= series.last_step:
                series.last_step, series.last_value = point.step, point.value
    MetricSeries.objects.bulk_create(created)
    MetricSeries.objects.bulk_update(
        [series for key, series in existing.items() if key in by_series],
        ["points", "last_step", "last_value", "min_value", "max_value"],
        batch_size=500,
    )
