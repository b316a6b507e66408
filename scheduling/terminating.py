"""Ending a job's tasks gracefully, for a Stop (scheduling.stopping) and a preemption
(scheduling.preempting): SIGTERM to every task, the job's grace period, then the kill.

The deadline is stored on the job (`Job.stop_deadline`, through jobs.lifecycle) before any signal
goes out, so a scheduler that restarts in the grace period keeps both the stop and its deadline:
it signals again once (the nodes ignore the repeat: the deadline does not move) and kills at the
stored time. The job's tasks keep their room until they are gone (scheduling.quota counts them).
"""

from __future__ import annotations

import logging
from datetime import datetime

from django.conf import settings

from clusters.executors.base import TaskHandle
from jobs.models import Job, Task, TaskState
from jobs.protocol.priority import grace_seconds
from scheduling import executors

log = logging.getLogger("pai.scheduler")


def grace_of(job: Job) -> int:
    """The job's grace period: its own (extras.gracePeriodSeconds), else the portal's default,
    never more than the admin's cap."""
    return grace_seconds(job.normalized, default=settings.PAI_GRACE_SECONDS, cap=settings.PAI_MAX_GRACE_SECONDS)


def live(tasks: list[Task]) -> list[Task]:
    """The tasks that run somewhere (started on a node)."""
    return [task for task in tasks if task.state == TaskState.RUNNING and task.node is not None and task.executor_id]


class Terminator:
    """Which jobs this scheduler has signalled (by job and attempt): each once."""

    def __init__(self) -> None:
        self.signalled: set[tuple[int, int]] = set()

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
