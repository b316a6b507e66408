"""One job cannot stop the loop: the phases wrap each job's share of their work in `job_guard`.

An exception there (a bug, or a row no check foresaw) is logged with its traceback and costs that
job alone: a running job fails with the platform's exit code -1204 and the exception as its
diagnostics (through jobs.lifecycle: its trigger task ended, then the job failed), a waiting one
waits saying why (placed again next pass), a stopping one is stopped again next pass, and the pass
goes on with the other jobs. A guard wraps one job, never a pass.

A database error is not the job's: the connection failed or went away (a restart, a failover, a
pooler or an idle-connection reaper closed it) or the database could not do it now (a lock, a
timeout). It stops the pass instead; the loop closes the connection and runs the pass again after a
short wait (Scheduler.run_pass), and the job's share is done then, once. Only when the same job's
share raises one OWN_DATABASE_ERRORS times running while the connection still answers is the error
its own (a value past a database limit): then it fails alone, so that no job can stop every pass.
The starting phase judges the database errors of its own shares the same way (`stops_the_pass`): a
start the database cut short is no failed start; the task stays claimed for the next pass.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager

from django.db import InterfaceError, OperationalError, connection
from django.utils import timezone

from catalogue import Message
from jobs import lifecycle
from jobs.lifecycle import TaskExit
from jobs.models import Job, JobState, TaskState, exit_diagnostics_fields
from jobs.protocol.exitspec import ExitCode, exit_info
from scheduling.backends import Backends
from scheduling.teardown import stop_job

log = logging.getLogger("pai.scheduler")

# The exit spec's row for a failure on the platform's side that nothing else explains; the
# diagnostics say what the scheduler could not do.
UNHANDLED_EXIT = ExitCode.CONTAINER_START_FAILED
ACTIVE = (TaskState.WAITING, TaskState.RUNNING)
# The database's own errors (django.db's): the pass stops and is run again, the job is not charged.
DATABASE_ERRORS = (OperationalError, InterfaceError)
OWN_DATABASE_ERRORS = 3
_database_errors: dict[int, int] = {}  # job id -> its share's database errors running


@contextmanager
def job_guard(job_id: int, backends: Backends, doing: str, *, task_id: int | None = None) -> Iterator[None]:
    """Run one job's share of a phase; `doing` says what, for the log and the job's diagnostics
    ("start its tasks"). An exception fails that job alone (see the module) and is not raised; a
    database error is raised (it stops the pass) unless it has become the job's own."""
    try:
        yield
    except Exception as exc:
        if stops_the_pass(job_id, exc):
            raise
        log.exception("job %s: could not %s; that job alone is failed", job_id, doing)
        try:
            reason = Message.of("reason.scheduler_failed", doing=doing, error=f"{type(exc).__name__}: {exc}")
            fail_alone(job_id, backends, reason, task_id)
        except Exception as failure:
            if isinstance(failure, DATABASE_ERRORS) and not database_answers():
                raise  # (its failure is recorded when the pass runs again)
            log.exception("job %s: recording its failure failed too", job_id)
    else:
        share_done(job_id)


def stops_the_pass(job_id: int, exc: BaseException) -> bool:
    """Whether an exception raised in this job's share stops the pass (a database error not the
    job's own: see the module) instead of failing the job alone. Judged once, where it was first
    caught: a share nested in another (a start within a launch) does not count it twice."""
    if not isinstance(exc, DATABASE_ERRORS):
        return False
    if getattr(exc, "pai_stops_the_pass", False):
        return True
    if _own_database_error(job_id):
        return False
    exc.pai_stops_the_pass = True  # type: ignore[union-attr]
    return True


def share_done(job_id: int) -> None:
    """This job's share ran without a database error: the count towards its own starts again."""
    _database_errors.pop(job_id, None)


def _own_database_error(job_id: int) -> bool:
    """Whether a database error in this job's share is the job's own: the connection still answers,
    and the share has raised one OWN_DATABASE_ERRORS times running."""
    if not database_answers():
        return False
    count = _database_errors[job_id] = _database_errors.get(job_id, 0) + 1
    if count < OWN_DATABASE_ERRORS:
        return False
    del _database_errors[job_id]
    return True


def database_answers() -> bool:
    """Whether the connection still works (after an error: not when the server closed it, nor when
    a failed rollback made Django drop it)."""
    return connection.connection is not None and connection.is_usable()


def fail_alone(job_id: int, backends: Backends, reason: Message, task_id: int | None = None) -> None:
    """Fail a running job because of `reason` (its task `task_id`, or any still active, ends with
    the platform's exit first); a waiting one waits with `reason` as why."""
    job = Job.objects.select_related("owner", "virtual_cluster").get(pk=job_id)
    if job.state == JobState.WAITING:
        lifecycle.set_pending_reason(job.pk, [reason])
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
        diagnostics=Message.of("exit.exited", phrase=info.phrase, said=reason),
        finished_at=timezone.now(),
    )
    try:  # whatever the job runs or holds is stopped, as at any other end
        stop_job(job, backends, tasks=tasks)
    except Exception:
        log.exception("job %s: stopping its tasks failed", job.pk)
    if trigger.state == TaskState.RUNNING:
        lifecycle.end_task(trigger, job.job_attempt, exit)
    # The job's exit is this one, whatever the trigger's own last exit was.
    trigger.exit_code, trigger.user_exit_code = exit.exit_code, None
    for field, value in exit_diagnostics_fields(exit.diagnostics).items():
        setattr(trigger, field, value)
    lifecycle.fail(job, trigger, ExitCode.FRAMEWORK_ATTEMPT_COMPLETION)
