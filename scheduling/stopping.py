"""Stop requests: a user's (or an admin's) stop is carried out here, before anything else of the
pass ends or starts. The job goes STOPPING; its running tasks get SIGTERM and the job's grace
period (scheduling.terminating: the deadline stored first), and once they have all ended or the
deadline has passed, everything the job holds is removed and the job is STOPPED. Bounded by the
grace (at most PAI_MAX_GRACE_SECONDS), and a restart in between loses neither stop nor deadline."""

from __future__ import annotations

from datetime import timedelta

from django.utils import timezone

from jobs import lifecycle
from jobs.models import Job, JobState
from jobs.protocol.exitspec import classify
from scheduling.backends import Backends
from scheduling.guard import job_guard
from scheduling.teardown import stop_job
from scheduling.terminating import Terminator, grace_of, live


def carry_out_stop_requests(backends: Backends, terminator: Terminator | None = None) -> bool:
    """True when a job began or finished stopping (its room is freed, or about to be)."""
    terminator = terminator or Terminator()
    jobs = list(
        (
            Job.objects.filter(execution_type=Job.ExecutionType.STOP, state__in=[JobState.WAITING, JobState.RUNNING])
            | Job.objects.filter(state=JobState.STOPPING)
        ).select_related("virtual_cluster")
    )
    info = classify(None, stopped=True)
    changed = False
    for job in jobs:
        # (A stop that fails is logged and tried again next pass; the other jobs' go on.)
        with job_guard(job.pk, backends, "stop it"):
            if job.state != JobState.STOPPING:
                if not lifecycle.begin_stopping(job):
                    continue  # it finished meanwhile
                job.state = JobState.STOPPING
                changed = True
            tasks = list(job.tasks.select_related("node"))
            codes: dict[int, int | None] = {}
            # (On a Slurm VC too: the SIGTERM goes through each task's wrapper, and Slurm's scancel,
            # which signals every process of the step at once, comes after the grace.)
            if live(tasks):
                now = timezone.now()
                if job.stop_deadline is None and (grace := grace_of(job)):
                    lifecycle.set_stop_deadline(job, now + timedelta(seconds=grace), grace)
                    job.refresh_from_db(fields=["stop_deadline"])
                if job.stop_deadline is not None:
                    terminator.signal(job, tasks)
                    done, codes = terminator.over(job, tasks, now)
                    if not done:
                        continue  # their grace goes on; looked at again next pass
            stop_job(job, backends, tasks=tasks)
            why = f"stopped because {job.stop_reason}." if job.stop_reason else "stopped at the user's request."
            lifecycle.finish_stopping(job, info.code, f"{info.phrase}: {why}", codes)
            changed = True
    return changed
