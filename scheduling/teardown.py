"""Stopping everything a job holds: its tasks on their nodes, their node-side leftovers (networks),
and what the backend that owns its VC holds (a Slurm allocation). Used when a job is stopped
(scheduling.stopping) and when its attempt ends (scheduling.ending)."""

from __future__ import annotations

import logging

from clusters.executors.base import TaskHandle
from jobs.models import Job, Task, TaskState
from scheduling import executors
from scheduling.backends import Backends

log = logging.getLogger("pai.scheduler")


def stop_job(job: Job, backends: Backends, *, keep: bool = False, tasks: list[Task] | None = None) -> None:
    """Stop every task of the job that holds something on a node, then the job's node-side
    leftovers. keep=True leaves failed containers for inspection (isDebug). `tasks` (the job's
    tasks with their nodes) are read from the database unless given."""
    tasks = tasks if tasks is not None else list(job.tasks.select_related("node"))
    # (Unless every task succeeded: their steps are ending by themselves.)
    if any(task.state != TaskState.SUCCEEDED for task in tasks):
        backends.cancel(job)
    nodes = {}
    for task in tasks:
        if task.node is None:
            continue
        nodes[task.node_id] = task.node
        if task.executor_id:
            try:
                executors.node_executor(task.node).stop(TaskHandle(task.executor_id, task.ip), keep=keep)
            except Exception as exc:
                log.warning("stopping %s failed: %s", task, exc)
    for node in nodes.values():
        try:
            executors.node_executor(node).cleanup_job(job.pk, keep=keep)
        except Exception as exc:
            log.warning("cleanup of %s on %s failed: %s", job, node, exc)
