"""Stop requests: a user's (or an admin's) stop is carried out here, before anything else of the
pass ends or starts: every task stopped where it runs, then the job STOPPED."""

from __future__ import annotations

from jobs import lifecycle
from jobs.models import Job, JobState
from jobs.protocol.exitspec import classify
from scheduling.backends import Backends
from scheduling.guard import job_guard
from scheduling.teardown import stop_job


def carry_out_stop_requests(backends: Backends) -> bool:
    jobs = list(
        Job.objects.filter(execution_type=Job.ExecutionType.STOP, state__in=[JobState.WAITING, JobState.RUNNING])
        | Job.objects.filter(state=JobState.STOPPING)
    )
    info = classify(None, stopped=True)
    for job in jobs:
        # (A stop that fails is logged and tried again next pass; the other jobs' go on.)
        with job_guard(job.pk, backends, "stop it"):
            if not lifecycle.begin_stopping(job):
                continue  # it finished meanwhile
            stop_job(job, backends)
            lifecycle.finish_stopping(job, info.code, f"{info.phrase}: stopped at the user's request.")
    return bool(jobs)
