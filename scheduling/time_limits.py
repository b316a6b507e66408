"""Time limits: a running job that reached its limit (Job.time_limit_seconds, counted from its
launch) is ended here, before the pass polls exits, by the one graceful-end path with the cause
`time_limit` (scheduling.terminating): its tasks get SIGTERM and the job's grace period
(extras.gracePeriodSeconds, PAI_GRACE_SECONDS, capped by PAI_MAX_GRACE_SECONDS) to save their
work, the deadline stored first; once they have all ended or the deadline has passed, everything
it holds is removed and the job is FAILED with the exit spec's -1230 (JobMaxRunTimeExceeded) and
an event saying so. A job being stopped or preempted already is left to that end.

On Slurm's VCs the same: SIGTERM through each task's wrapper, the grace, then Slurm's scancel.
`--time` carries the limit plus the grace, so Slurm ends the job only where the portal could not
(its TIMEOUT maps to the same code, after Slurm's own SIGTERM and KillWait); whichever comes first
wins, the other's conditional UPDATE matches nothing.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from django.db.models import QuerySet
from django.utils import timezone

from jobs.models import Job, JobState
from queries.prepared import Prepared
from scheduling.backends import Backends
from scheduling.guard import job_guard
from scheduling.terminating import Terminator


def _limited() -> QuerySet[Job, tuple[int, datetime | None, int | None]]:
    """The running jobs with a time limit, as (pk, launched_at, limit) (read every pass: its SQL
    compiled once, _LIMITED)."""
    return Job.objects.filter(
        state=JobState.RUNNING,
        time_limit_seconds__isnull=False,
        launched_at__isnull=False,
        ending_cause__in=["", Job.Ending.TIME_LIMIT],  # (a Stop or a preemption under way ends it)
    ).values_list("pk", "launched_at", "time_limit_seconds")


_LIMITED: Prepared[tuple[int, datetime | None, int | None]] = Prepared(_limited)


def overdue(now: datetime) -> list[int]:
    """Each running job past its time limit, or in the grace its time limit gave it."""
    rows: list[tuple[int, datetime | None, int | None]] = _LIMITED()
    return [
        pk
        for pk, launched_at, limit in rows
        if launched_at is not None and limit is not None and launched_at + timedelta(seconds=limit) <= now
    ]


def end_overdue_jobs(backends: Backends, now: datetime | None = None, terminator: Terminator | None = None) -> bool:
    """End each running job past its time limit: SIGTERM and its grace first. True when any ended."""
    terminator = terminator or Terminator()
    now = now or timezone.now()
    ended = False
    for job_id in overdue(now):
        with job_guard(job_id, backends, "end it at its time limit"):
            job = Job.objects.select_related("owner", "virtual_cluster").get(pk=job_id)
            if job.state == JobState.RUNNING and job.ending_cause in ("", Job.Ending.TIME_LIMIT):
                ended |= terminator.end(job, Job.Ending.TIME_LIMIT, backends, now)
    return ended
