"""Time limits: a running job that reached its limit (Job.time_limit_seconds, counted from its
launch) is ended here, before the pass polls exits: everything it holds stopped, then the job
FAILED with the exit spec's -1230 (JobMaxRunTimeExceeded) and an event saying so.

On Slurm's VCs `--time` carries the same limit, so Slurm ends a job there too (its TIMEOUT maps to
the same code); whichever comes first wins, the other's conditional UPDATE matches nothing.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from django.utils import timezone

from jobs import lifecycle
from jobs.models import Job, JobState
from jobs.protocol.exitspec import ExitCode, exit_info
from jobs.protocol.timelimit import duration_text
from scheduling.backends import Backends
from scheduling.guard import job_guard
from scheduling.teardown import stop_job


def overdue(now: datetime) -> list[tuple[int, int]]:
    """(job id, its limit in seconds) of each running job past its time limit."""
    rows = Job.objects.filter(
        state=JobState.RUNNING, time_limit_seconds__isnull=False, launched_at__isnull=False
    ).values_list("pk", "launched_at", "time_limit_seconds")
    return [
        (pk, limit)
        for pk, launched_at, limit in rows
        if launched_at is not None and limit is not None and launched_at + timedelta(seconds=limit) <= now
    ]


def end_overdue_jobs(backends: Backends, now: datetime | None = None) -> bool:
    """End each running job past its time limit. True when any was ended."""
    info = exit_info(ExitCode.TIME_LIMIT_EXCEEDED)
    ended = False
    for job_id, limit in overdue(now or timezone.now()):
        with job_guard(job_id, backends, "end it at its time limit"):
            job = Job.objects.select_related("owner", "virtual_cluster").get(pk=job_id)
            if job.state != JobState.RUNNING:
                continue
            stop_job(job, backends)
            ended |= lifecycle.end_at_time_limit(job, info.code, info.phrase, duration_text(limit))
    return ended
