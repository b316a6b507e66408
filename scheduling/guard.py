"""One job cannot stop the loop: the phases wrap each job's share of their work in `job_guard`.

An exception there (a bug, or a row no check foresaw) is logged with its traceback and costs that
job alone: a running job fails with the platform's exit code -1204 and the exception as its
diagnostics (through jobs.lifecycle: its trigger task ended, then the job failed), a waiting one
waits saying why (placed again next pass), a stopping one is stopped again next pass, and the pass
goes on with the other jobs. A guard wraps one job, never a pass.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager

from django.utils import timezone

from jobs import lifecycle
from jobs.lifecycle import TaskExit
from jobs.models import Job, JobState, TaskState
from jobs.protocol.exitspec import ExitCode, exit_info
from scheduling.backends import Backends
from scheduling.teardown import stop_job

log = logging.getLogger("pai.scheduler")

# The exit spec's row for a failure on the platform's side that nothing else explains; the
# diagnostics say what the scheduler could not do.
UNHANDLED_EXIT = ExitCode.CONTAINER_START_FAILED
ACTIVE = (TaskState.WAITING, TaskState.RUNNING)


@contextmanager
def job_guard(job_id: int, backends: Backends, doing: str, *, task_id: int | None = None) -> Iterator[None]:
    """Run one job's share of a phase; `doing` says what, for the log and the job's diagnostics
    ("start its tasks"). An exception fails that job alone (see the module) and is not raised."""
    try:
        yield
    except Exception as exc:
        log.exception("job %s: could not %s; that job alone is failed", job_id, doing)
        try:
            fail_alone(job_id, backends, f"the scheduler could not {doing}: {type(exc).__name__}: {exc}", task_id)
        except Exception:
            log.exception("job %s: recording its failure failed too", job_id)


def fail_alone(job_id: int, backends: Backends, reason: str, task_id: int | None = None) -> None:
    """Fail a running job because of `reason` (its task `task_id`, or any still active, ends with
    the platform's exit first); a waiting one waits with `reason` as why."""
    job = Job.objects.select_related("owner", "virtual_cluster").get(pk=job_id)
    if job.state == JobState.WAITING:
        lifecycle.set_pending_reason(job.pk, reason)
        return
    if job.state != JobState.RUNNING:
        return
    tasks = list(job.tasks.select_related("node"))
    active = [task for task in tasks if task.state in ACTIVE]
    trigger = next((task for task in tasks if task.pk == task_id), None) or (active or tasks)[0]
    info = exit_info(UNHANDLED_EXIT)
    exit = TaskExit(
        exit_code=info.code,
        user_exit_code=None,
        phrase=info.phrase,
        diagnostics=f"{info.phrase}: {reason}",
        finished_at=timezone.now(),
    )
    try:  # whatever the job runs or holds is stopped, as at any other end
        stop_job(job, backends, tasks=tasks)
    except Exception:
        log.exception("job %s: stopping its tasks failed", job.pk)
    if trigger.state == TaskState.RUNNING:
        lifecycle.end_task(trigger, job.job_attempt, exit)
    # The job's exit is this one, whatever the trigger's own last exit was.
    trigger.exit_code, trigger.user_exit_code, trigger.exit_diagnostics = exit.exit_code, None, exit.diagnostics
    lifecycle.fail(job, trigger, ExitCode.FRAMEWORK_ATTEMPT_COMPLETION)
