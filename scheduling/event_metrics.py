"""The training-metrics duty's share of TensorBoard event files (scheduling/event_files.py reads
them): each job's outputDir opened in its owner's area, its event files' progress kept in a
`tb` MetricSource per file, on the job's first task (by role and index), whom their scalars are
credited to."""

from __future__ import annotations

import logging
import os
from dataclasses import dataclass

from jobs.models import Job, MetricSource, Task
from jobs.protocol.metrics import Point
from jobs.states import FINISHED_JOB_STATES
from jobs.storage import areas as storage
from scheduling.event_files import EventFiles, Progress

log = logging.getLogger("pai.sampler")


@dataclass
class EventRead:
    """What one read of one event file gave, and whether its row must be written."""

    task_id: int
    job_id: int
    source: MetricSource
    points: list[Point]
    changed: bool


def _first_tasks(job_ids: set[int]) -> dict[int, int]:
    """Each job's first task (by role and index), by task id: whom its event files are credited to."""
    first: dict[int, int] = {}
    rows = Task.objects.filter(job_id__in=job_ids).order_by("job_id", "role", "index").values_list("job_id", "pk")
    for job_id, task_id in rows:
        first.setdefault(job_id, task_id)
    return {task_id: job_id for job_id, task_id in first.items()}


def event_reads(job_ids: set[int], files: EventFiles) -> list[EventRead]:
    """The new scalars of the TensorBoard event files below each job's outputDir."""
    first = _first_tasks(job_ids)
    sources = {
        (source.task_id, source.path): source
        for source in MetricSource.objects.filter(task_id__in=first, kind=MetricSource.Kind.EVENTS)
    }
    tasks = {job_id: task_id for task_id, job_id in first.items()}
    read: list[EventRead] = []
    jobs = Job.objects.filter(pk__in=tasks).values_list("pk", "owner__username", "spec", "state")
    for job_id, username, spec, state in jobs:
        output = storage.job_paths(spec).get("outputDir")
        folder = storage.open_area_folder(username, output) if output else None
        if folder is None:
            continue
        try:
            final = state in FINISHED_JOB_STATES
            read += _read_folder(tasks[job_id], job_id, folder, sources, files, final=final)
        finally:
            os.close(folder)
    files.keep_only(set(first))
    return read


def _read_folder(
    task_id: int,
    job_id: int,
    folder: int,
    sources: dict[tuple[int, str], MetricSource],
    files: EventFiles,
    *,
    final: bool,
) -> list[EventRead]:
    known = {
        path: Progress(source.offset, source.next_step, corrupt=source.bad_lines > 0)
        for (owner, path), source in sources.items()
        if owner == task_id
    }
    read = []
    for relative, event_file in files.found(task_id, folder, known).items():
        source = sources.get((task_id, relative)) or MetricSource(
            task_id=task_id, kind=MetricSource.Kind.EVENTS, path=relative
        )
        progress = known[relative]
        before = (source.offset, source.next_step)
        try:
            reading = event_file.read(relative, progress, final=final)
        except OSError as error:  # (the loader's own reads: never fatal)
            log.info("event file %s of job %s not read: %s", relative, job_id, error)
            continue
        if reading.corrupt:
            log.info("event file %s of job %s is corrupt: read no more", relative, job_id)
            source.bad_lines += 1
            files.forget(task_id, relative)
        source.offset, source.next_step = progress.offset, progress.next_step
        changed = source.pk is None or reading.corrupt or before != (source.offset, source.next_step)
        read.append(EventRead(task_id, job_id, source, reading.points, changed))
    return read
