"""The one graceful-end path. A Stop (scheduling.stopping), a time limit (scheduling.time_limits), a
preemption and a reclaim (scheduling.preempting) all end a job here, as Kueue's single eviction
path does, told apart only by the cause in the job's ending record (Job.ending_cause):

begin: the record (cause, by whom, deadline: now + the job's grace) is stored (lifecycle.begin_ending)
before any signal, so a scheduler that restarts in the grace keeps both the end and its deadline
→ signal: SIGTERM to every running task, once per scheduler (a restarted one signals again once:
the nodes ignore the repeat, the deadline does not move) → over?: its tasks all gone, or the
deadline passed → tear down: everything it holds removed (scheduling.teardown; on a Slurm VC,
scancel after the grace) → finish, as the cause says: a Stop STOPPED (-210), a time limit FAILED
(-1230), a preemption or a reclaim back to WAITING free of charge (-1003).

The phases choose which jobs end and why, within their own budgets; a preemption begins in the
placing phase, the others when their phase reaches the job. A job with nothing running, or no
grace, is torn down and finished at once (no deadline, no signal). The job's tasks keep their room
until they are gone (scheduling.quota counts them).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.db import transaction

from catalogue import Message
from clusters.executors.base import TaskHandle
from jobs import lifecycle
from jobs.models import Job, Task, TaskState
from jobs.protocol.exitspec import ExitCode, classify, exit_info
from jobs.protocol.priority import grace_seconds
from jobs.protocol.timelimit import duration_text
from scheduling import executors
from scheduling.backends import Backends
from scheduling.teardown import stop_job

log = logging.getLogger("pai.scheduler")

STOPPED = classify(None, stopped=True)  # a Stop's end (-210)
# What an end writes with its record once its job is re-read (the rest of the job never changes here).
RECORD = ("ending_cause", "ending_by", "ending_reason", "ending_deadline")


def grace_of(job: Job) -> int:
    """The job's grace period: its own (extras.gracePeriodSeconds), else the portal's default,
    never more than the admin's cap."""
    return grace_seconds(job.normalized, default=settings.PAI_GRACE_SECONDS, cap=settings.PAI_MAX_GRACE_SECONDS)


def live(tasks: list[Task]) -> list[Task]:
    """The tasks that run somewhere (started on a node)."""
    return [task for task in tasks if task.state == TaskState.RUNNING and task.node is not None and task.executor_id]


def stop_diagnostics(reason: str, message: dict[str, Any]) -> Message:
    """A stopped job's diagnostics: why the portal stopped it (Job.ending_reason, its message; an
    older row's English), else the user's Stop."""
    why = Message.from_dict(message) if message else Message.of("exit.said", said=reason) if reason else None
    return Message.of(
        "exit.exited",
        phrase=STOPPED.phrase,
        said=Message.of("exit.stopped_because", why=why) if why else Message.of("exit.stopped_by_user"),
    )


class Terminator:
    """The path, with what it keeps between passes: which jobs this scheduler has signalled (by job
    and attempt), each once."""

    def __init__(self) -> None:
        self.signalled: set[tuple[int, int]] = set()

    def begin(self, job: Job, cause: str, tasks: list[Task], now: datetime, *, by: Job | None = None) -> bool:
        """Store the job's ending record, then signal its tasks. False when another end began
        first, or the job is not there to end."""
        grace = grace_of(job)
        if not lifecycle.begin_ending(job, cause, now + timedelta(seconds=grace), grace, by=by):
            return False
        job.refresh_from_db(fields=RECORD)
        self.signal(job, tasks)
        return True

    def end(
        self,
        job: Job,
        cause: str,
        backends: Backends,
        now: datetime,
        *,
        requeued: Callable[[Job, list[Task]], object] = lambda job, tasks: None,
    ) -> bool:
        """One pass's step of the job's end: begun (with its grace, when its tasks run), signalled,
        and once over, torn down and finished. True once it ended; False while its grace goes on,
        or when it could not be ended (another end began first: that one ends it). `requeued`
        runs in the transaction that puts a preempted job back in the queue (its held room)."""
        tasks = list(job.tasks.select_related("node"))
        codes: dict[int, int | None] = {}
        if live(tasks) or job.ending_deadline is not None:
            if job.ending_deadline is None and grace_of(job) and not self.begin(job, cause, tasks, now):
                return False
            if job.ending_deadline is not None:
                self.signal(job, tasks)  # (once per scheduler: again after a restart)
                done, codes = self.over(job, tasks, now)
                if not done:
                    return False  # looked at again next pass
        stop_job(job, backends, tasks=tasks)
        return self._finish(job, cause, tasks, codes, requeued)

    def _finish(
        self,
        job: Job,
        cause: str,
        tasks: list[Task],
        codes: dict[int, int | None],
        requeued: Callable[[Job, list[Task]], object],
    ) -> bool:
        """The end the cause calls for (`codes`: what each task's own process exited with in its
        grace, where seen)."""
        if cause == Job.Ending.STOP:
            return lifecycle.finish_stopping(
                job, STOPPED.code, stop_diagnostics(job.ending_reason, job.ending_reason_message), codes
            )
        if cause == Job.Ending.TIME_LIMIT:
            info = exit_info(ExitCode.TIME_LIMIT_EXCEEDED)
            limit = duration_text(job.time_limit_seconds or 0)
            return lifecycle.end_at_time_limit(job, info.code, info.phrase, limit, codes)
        info = exit_info(ExitCode.PREEMPTED_FOR_CRITICAL_POD)
        with transaction.atomic():
            if not lifecycle.requeue_preempted(job, info.code, info.phrase, codes):
                return False
            requeued(job, tasks)
        return True

    def signal(self, job: Job, tasks: list[Task]) -> None:
        key = (job.pk, job.job_attempt)
        if key in self.signalled:
            return
        grace = grace_of(job)
        for task in live(tasks):
            assert task.node is not None
            try:
                executors.node_executor(task.node).terminate(TaskHandle(task.executor_id, task.ip), grace)
            except Exception as exc:  # (killed at the deadline all the same)
                log.warning("SIGTERM to %s failed: %s", task, exc)
        self.signalled.add(key)

    def over(self, job: Job, tasks: list[Task], now: datetime) -> tuple[bool, dict[int, int | None]]:
        """Whether the job's tasks are all gone or its deadline has passed, and the code each
        task's own process exited with, where seen (by task id)."""
        codes: dict[int, int | None] = {}
        running = False
        for task in live(tasks):
            assert task.node is not None
            try:
                status = executors.node_executor(task.node).poll(TaskHandle(task.executor_id, task.ip))
            except Exception as exc:  # (its node does not answer: the kill at the deadline decides)
                log.warning("polling %s failed: %s", task, exc)
                running = True
                continue
            if status.running:
                running = True
            else:
                codes[task.pk] = status.exit_code
        done = not running or job.ending_deadline is None or now >= job.ending_deadline
        if done:
            self.signalled.discard((job.pk, job.job_attempt))
        return done, codes
