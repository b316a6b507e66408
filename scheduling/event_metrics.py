"""The training-metrics duty's share of TensorBoard event files (scheduling/event_files.py reads
them): each job's log folders (its `tensorboard` plugin's `logdir`, in the owner's area or the
TensorBoard task's work dir; else a v1 config's outputDir, in the owner's area) opened without
following a link, its event files' progress kept in a `tb` MetricSource per file, on the job's
first task (by role and index), whom their scalars are credited to."""

from __future__ import annotations

import logging
import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import PurePosixPath

from clusters import job_files, userfs
from jobs.models import Job, MetricSource, Task
from jobs.protocol.hooks import tensorboard_logdirs, tensorboard_role
from jobs.protocol.metrics import AREA, Point, locate_logdir
from jobs.protocol.spec import NormalizedSpec
from jobs.states import FINISHED_JOB_STATES
from jobs.storage import areas as storage
from scheduling.event_files import EventFiles, Progress
from scheduling.launch import DOCKER_WORK_DIR

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


def event_reads(job_ids: set[int], files: EventFiles, work_root: int) -> list[EventRead]:
    """The new scalars of the TensorBoard event files in each job's log folders (event_folders);
    `work_root`: the tasks' work root, open."""
    first = _first_tasks(job_ids)
    sources = {
        (source.task_id, source.path): source
        for source in MetricSource.objects.filter(task_id__in=first, kind=MetricSource.Kind.EVENTS)
    }
    tasks = {job_id: task_id for task_id, job_id in first.items()}
    read: list[EventRead] = []
    jobs = Job.objects.filter(pk__in=tasks).values_list("pk", "owner__username", "spec", "state")
    for job_id, username, spec, state in jobs:
        final = state in FINISHED_JOB_STATES
        for prefix, folder in event_folders(job_id, username, spec, work_root):
            try:
                read += _read_folder(tasks[job_id], job_id, folder, prefix, sources, files, final=final)
            finally:
                os.close(folder)
    files.keep_only(set(first))
    return read


def event_folders(job_id: int, username: str, spec: NormalizedSpec, work_root: int) -> Iterator[tuple[str, int]]:
    """(the prefix of its files' names, a new descriptor) of each of a job's folders of event files
    that is there: the `tensorboard` plugin's log folders where the config names any (each below
    its run's name when there are several, as TensorBoard names them; those in the owner's area or
    the TensorBoard task's work dir), else a v1 config's outputDir. The caller closes each."""
    logdirs = tensorboard_logdirs(spec)
    if not logdirs:
        output = storage.job_paths(spec).get("outputDir")
        folder = storage.open_area_folder(username, output) if output else None
        if folder is not None:
            yield "", folder
        return
    area = storage.default_fs_uri(username)
    role = tensorboard_role(spec) or ""
    work_dir = f"{job_files.job_dir_name(job_id)}/{role}-0"
    work_dirs = (DOCKER_WORK_DIR, str(job_files.task_work_dir(job_id, role, 0)))
    for name, path in logdirs.items():
        place = locate_logdir(path, area=area, work_dirs=work_dirs)
        if place is None:
            continue
        if place.where == AREA:
            folder = storage.open_area_folder(username, str(PurePosixPath(area, place.relative)))
        else:
            try:
                folder = userfs.open_dir(work_root, f"{work_dir}/{place.relative}")
            except (OSError, userfs.UserFsError):  # (not made yet; a link: the task's doing)
                folder = None
        if folder is not None:
            yield (f"{name}/" if len(logdirs) > 1 else ""), folder


def _read_folder(
    task_id: int,
    job_id: int,
    folder: int,
    prefix: str,
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
    for relative, event_file in files.found(task_id, folder, known, prefix).items():
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
