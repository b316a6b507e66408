"""Time limits: a running job that reached its limit (Job.time_limit_seconds, counted from its
launch) is ended here, before the pass polls exits, the way a Stop ends one (scheduling.terminating):
its tasks get SIGTERM and the job's grace period (extras.gracePeriodSeconds, PAI_GRACE_SECONDS,
capped by PAI_MAX_GRACE_SECONDS) to save their work, the deadline stored first
(lifecycle.begin_time_limit_end); once they have all ended or the deadline has passed, everything
it holds is removed and the job is FAILED with the exit spec's -1230 (JobMaxRunTimeExceeded) and
an event saying so. A job being stopped or preempted already is left to that end.

On Slurm's VCs the same: SIGTERM through each task's wrapper, the grace, then Slurm's scancel.
`--time` carries the limit plus the grace, so Slurm ends the job only where the portal could not
(its TIMEOUT maps to the same code, after Slurm's own SIGTERM and KillWait); whichever comes first
wins, the other's conditional UPDATE matches nothing.
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
from scheduling.terminating import Terminator, grace_of, live


def overdue(now: datetime) -> list[tuple[int, int]]:
    """(job id, its limit in seconds) of each running job past its time limit, or in the grace
    its time limit gave it."""
    rows = Job.objects.filter(
        state=JobState.RUNNING, time_limit_seconds__isnull=False, launched_at__isnull=False
    ).values_list("pk", "launched_at", "time_limit_seconds", "ending_cause")
    return [
        (pk, limit)
        for pk, launched_at, limit, cause in rows
        if launched_at is not None
        and limit is not None
        and cause in ("", Job.Ending.TIME_LIMIT)  # (a Stop or a preemption under way ends it)
        and launched_at + timedelta(seconds=limit) <= now
    ]


def end_overdue_jobs(backends: Backends, now: datetime | None = None, terminator: Terminator | None = None) -> bool:
    """End each running job past its time limit: SIGTERM and its grace first. True when any ended."""
    info = exit_info(ExitCode.TIME_LIMIT_EXCEEDED)
    terminator = terminator or Terminator()
    now = now or timezone.now()
    ended = False
    for job_id, limit in overdue(now):
        with job_guard(job_id, backends, "end it at its time limit"):
            job = Job.objects.select_related("owner", "virtual_cluster").get(pk=job_id)
            if job.state != JobState.RUNNING:
                continue
            tasks = list(job.tasks.select_related("node"))
            codes: dict[int, int | None] = {}
            if live(tasks):
                if job.ending_deadline is None and (grace := grace_of(job)):
                    if not lifecycle.begin_ending(job, Job.Ending.TIME_LIMIT, now + timedelta(seconds=grace), grace):
                        continue  # a stop or a preemption began meanwhile: it ends the job
                    job.refresh_from_db(fields=["ending_deadline", "ending_cause"])
                if job.ending_deadline is not None:
                    terminator.signal(job, tasks)
                    done, codes = terminator.over(job, tasks, now)
                    if not done:
                        continue  # their grace goes on; looked at again next pass
            stop_job(job, backends, tasks=tasks)
            ended |= lifecycle.end_at_time_limit(job, info.code, info.phrase, duration_text(limit), codes)
    return ended
