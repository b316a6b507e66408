"""A task attempt ended: classify how (the exit spec), decide (retry it in place, or end it; then
the job's completion policy: succeed, fail, or retry the job), and write it through jobs.lifecycle.

This phase starts nothing. A task retried in place is left claimed and unstarted (its next attempt,
RUNNING with no executor id) for scheduling.starting; a start that failed comes here as a
FailedStart and is decided like any other exit.
"""

from __future__ import annotations

import itertools
import logging
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime

from django.conf import settings
from django.utils import timezone

from catalogue import Message
from clusters.executors.base import Failure, TaskHandle, TaskStatus
from clusters.models import Node
from jobs import lifecycle
from jobs.lifecycle import TaskExit
from jobs.logs import masked_tail
from jobs.models import Job, JobState, Task, TaskState
from jobs.protocol.completion import job_outcome
from jobs.protocol.exitspec import LOG_TAIL_BYTES, ExitCode, ExitInfo, classify, exit_info
from jobs.protocol.retry import Retry, job_retry, task_retry
from queries.prepared import Prepared
from scheduling import executors
from scheduling import launch as launch_builder
from scheduling.backends import Backends
from scheduling.exits import platform_exit_code
from scheduling.guard import job_guard
from scheduling.teardown import stop_job

log = logging.getLogger("pai.scheduler")


# What a job's progress changes (re-read before deciding its outcome).
JOB_PROGRESS_FIELDS = (
    "state",
    "ending_cause",
    "job_attempt",
    "retries_used",
    "transient_retries",
    "exit_code",
    "completed_at",
    "updated_at",
)


@dataclass(frozen=True)
class FailedStart:
    """A task attempt that could not start, as scheduling.starting recorded it."""

    job: Job
    task: Task
    status: TaskStatus
    platform_code: int | None


@dataclass
class Ended:
    """What an ending phase did: whether any job changed, and the task attempts it retried in
    place ((task id, its new attempt): claimed and unstarted, for the starting phase)."""

    changed: bool = False
    retried: set[tuple[int, int]] = field(default_factory=set)
    # Tasks whose network found a port of theirs held once started (their start had found it free):
    # (node name, the task's ports, what was said), for the loop to keep out of placement a while.
    ports_held: list[tuple[str, dict[str, list[int]], str | Message]] = field(default_factory=list)


def _task_exit(info: ExitInfo, status: TaskStatus) -> TaskExit:
    said = status.diagnostics or info.reason
    if isinstance(said, str):  # (an engine's own words)
        said = Message.of("exit.said", said=said)
    if info.match is not None and info.match.line:  # the log line that explained it (masked)
        said = Message.of("exit.log_says", said=said, line=info.match.line)
    started, finished = _run_clock(status)
    return TaskExit(
        exit_code=info.code,
        user_exit_code=info.user_code,
        phrase=info.phrase,
        diagnostics=Message.of("exit.exited", phrase=info.phrase, said=said) if info.code else None,
        finished_at=finished,
        started_at=started,
    )


def _run_clock(status: TaskStatus) -> tuple[datetime | None, datetime]:
    """One clock per run: the engine's start and finish when it reports both; else None (the
    portal's stamp of the start stands) and the end now, when the portal sees it. An engine's
    finish beside the portal's start would mix clocks: a task that ended before its start was
    recorded would have run backwards."""
    if status.started_at is not None and status.finished_at is not None:
        return status.started_at, status.finished_at
    return None, timezone.now()


def record_exit(
    task: Task, status: TaskStatus, platform_code: int | None = None, *, retry_in_place: bool = True
) -> bool:
    """Classify how this task attempt ended and record it: retried on its node, or ended. True
    when it was retried in place (the next attempt waits, claimed, for the starting phase).
    retry_in_place=False where the task cannot run again as it was (its Slurm allocation
    ended): then only the job is retried, as the exit spec says."""
    info = classify(
        status.exit_code,
        oom_killed=status.oom_killed,
        platform_exit_code=platform_code if platform_code is not None else platform_exit_code(status.failure),
        # Masked: the line a pattern matched is shown to the job's readers.
        log_tail=masked_tail(task.job, task.log_path, LOG_TAIL_BYTES).decode("utf-8", errors="replace"),
    )
    job = task.job
    node_lost = status.failure is Failure.NODE_LOST
    exit = _task_exit(info, status)
    # A task on a lost node, or whose ports another program holds, is not retried as it was:
    # its job is, placed again (on the nodes that answer, avoiding the clashing ports).
    decision = (
        Retry.NONE
        if node_lost or status.failure is Failure.PORT_CONFLICT or not retry_in_place
        else task_retry(
            code=info.code,
            behaviour=info.behaviour,
            retries=task.retries,
            allowed=job.normalized["taskRoles"][task.role].get("taskRetryCount") or 0,
            transient_used=job.transient_retries,
            transient_cap=settings.PAI_MAX_TRANSIENT_RETRIES,
        )
    )
    if decision is Retry.NONE:
        retried = False
        lifecycle.end_task(task, job.job_attempt, exit)
    else:
        retried = lifecycle.retry_task(task, job.job_attempt, exit, charged=decision is Retry.CHARGED)
    # Only once its exit is recorded (a pass the database failed before then polls it again):
    # remove the container/process record; isDebug keeps failed ones for inspection.
    if task.node is not None and task.executor_id and not node_lost:
        try:
            keep = launch_builder.is_debug(job.normalized) and info.code != 0
            executors.node_executor(task.node).stop(TaskHandle(task.executor_id, task.ip), keep=keep)
        except Exception as exc:
            log.warning("removing %s failed: %s", task, exc)
    return retried


def apply_completion_policy(job: Job, backends: Backends) -> None:
    # Re-read: not the config, spec and keys (they never change); as plain values (refresh_from_db
    # builds a queryset with deferred fields and a model instance to copy them from, per job).
    progress = Job.objects.filter(pk=job.pk).values_list(*JOB_PROGRESS_FIELDS).get()
    for name, value in zip(JOB_PROGRESS_FIELDS, progress, strict=True):
        setattr(job, name, value)
    if job.state != JobState.RUNNING:
        return
    tasks = list(job.tasks.select_related("node"))
    outcome = job_outcome(job.normalized, [(t.role, t.state) for t in tasks])
    if outcome is None:
        return
    if outcome == JobState.SUCCEEDED:
        stop_job(job, backends, tasks=tasks)
        lifecycle.succeed(job, ExitCode.FRAMEWORK_ATTEMPT_COMPLETION, tasks=tasks)
        return
    failed = [t for t in tasks if t.state == TaskState.FAILED]
    trigger = max(failed, key=lambda t: t.finished_at or timezone.now()) if failed else tasks[0]
    info = exit_info(trigger.exit_code if trigger.exit_code is not None else 255, trigger.user_exit_code)
    decision = job_retry(
        behaviour=info.behaviour,
        retries_used=job.retries_used,
        allowed=job.normalized.get("jobRetryCount") or 0,
        transient_used=job.transient_retries,
        transient_cap=settings.PAI_MAX_TRANSIENT_RETRIES,
    )
    stop_job(job, backends, keep=launch_builder.is_debug(job.normalized), tasks=tasks)
    if decision is Retry.NONE:
        lifecycle.fail(job, trigger, ExitCode.FRAMEWORK_ATTEMPT_COMPLETION, tasks=tasks)
    else:
        lifecycle.requeue_for_retry(
            job,
            trigger,
            charged=decision is Retry.CHARGED,
            leftover_exit_code=ExitCode.FRAMEWORK_ATTEMPT_COMPLETION,
            tasks=tasks,
        )


# The tasks a pass may inspect in full looks (nodes whose event streams cannot vouch for every exit:
# just opened, lost, or due their periodic look). Past it the other nodes' full looks wait for a
# later pass, their streams' exits still handled: 10,000 tasks whose streams opened together made
# one pass of 100 s and more, during which every node's next full look fell due (bench/running_scale.py).
FULL_LOOK_TASKS = 200
_first_node = itertools.count()  # (the node whose full look goes first, moved on each pass)


def _may_have_ended(
    running: list[tuple[int, str, str, int]], nodes: dict[int, Node]
) -> list[tuple[int, str, str, int]]:
    """The running tasks to poll: on a node whose executor tells which of its tasks ended (a Docker
    engine's event stream), those; where it cannot tell (a full look), every one, while the pass's
    FULL_LOOK_TASKS last (the first node's full look always: the nodes take turns going first, so
    each one's comes). (A listing of the running containers does not tell: a container the engine
    lists as running may hold a task that ended, and taking the listing's word held such exits for
    tens of seconds.)"""
    tasks_on = Counter(row[3] for row in running)
    order = sorted(tasks_on)
    if order:
        start = next(_first_node) % len(order)
        order = order[start:] + order[:start]
    budget = FULL_LOOK_TASKS
    seen: dict[int, set[str] | None] = {}
    for node_id in order:
        seen[node_id] = _exits_seen(nodes[node_id], may_look_in_full=budget > 0)
        if seen[node_id] is None:
            budget -= tasks_on[node_id]
    return [row for row in running if (ended := seen[row[3]]) is None or row[1] in ended]


def _exits_seen(node: Node, *, may_look_in_full: bool) -> set[str] | None:
    try:
        return executors.node_executor(node).exits_seen(may_look_in_full)
    except Exception as exc:
        log.warning("asking %s which tasks ended failed: %s", node.name, exc)
        return None


# The running tasks a poll may find ended, as plain values (read every pass: its SQL compiled once).
_RUNNING: Prepared[tuple[int, str, str, int]] = Prepared(
    lambda: (
        Task.objects.filter(state=TaskState.RUNNING, job__state=JobState.RUNNING, node__isnull=False)
        .filter(job__ending_deadline__isnull=True)  # (a preempted job's tasks end in scheduling.preempting)
        .exclude(executor_id="")
        .values_list("pk", "executor_id", "ip", "node_id")
    )
)


def run(
    backends: Backends,
    failed_starts: list[FailedStart],
    suspects: set[int],
    meanwhile: Callable[[], object] = lambda: None,
) -> Ended:
    """The ending phase: the starts that failed since the last one, then the running tasks that may
    have ended polled on their nodes (every one where a node cannot tell). A poll that finds the
    node silent only makes it a suspect (`suspects`: the heartbeat decides whether it is down).
    `meanwhile` runs after each recorded exit (a backend's launches wait on no exit's record)."""
    ended = Ended()
    changed_jobs: dict[int, Job] = {}
    while failed_starts:  # (each leaves the list once recorded: a pass the database failed keeps the rest)
        failed = failed_starts[0]
        task = failed.task
        with job_guard(task.job_id, backends, "record how its task failed to start", task_id=task.pk):
            task.job = changed_jobs.get(task.job_id, failed.job)
            if record_exit(task, failed.status, failed.platform_code):
                ended.retried.add((task.pk, task.attempt + 1))
        del failed_starts[0]
        changed_jobs[task.job_id] = task.job
    # Only what a poll needs, as plain values; the task and its job are read once it exited.
    running = _RUNNING()
    nodes = {node.pk: node for node in Node.objects.filter(pk__in={row[3] for row in running})} if running else {}
    for task_id, executor_id, ip, node_id in _may_have_ended(running, nodes):
        node = nodes[node_id]
        try:
            status = executors.node_executor(node).poll(TaskHandle(executor_id, ip))
        except Exception as exc:
            log.warning("polling task %s on %s failed: %s", task_id, node.name, exc)
            status = TaskStatus(running=False, lost=True, failure=Failure.NODE_LOST, diagnostics=str(exc))
        if status.running:
            continue
        if status.failure is Failure.NODE_LOST:
            suspects.add(node_id)
            continue
        task = Task.objects.select_related("job__virtual_cluster").get(pk=task_id)
        if task.node_id == node_id:
            task.node = node  # (read with the running tasks: not again per exit)
        if status.failure is Failure.PORT_CONFLICT:
            ended.ports_held.append((node.name, task.ports, status.diagnostics))
        with job_guard(task.job_id, backends, "record how its task ended", task_id=task.pk):
            task.job = changed_jobs.get(task.job_id, task.job)
            if record_exit(task, status):
                ended.retried.add((task.pk, task.attempt + 1))
        changed_jobs[task.job_id] = task.job
        meanwhile()
    for job in changed_jobs.values():
        with job_guard(job.pk, backends, "apply its completion policy"):
            apply_completion_policy(job, backends)
        meanwhile()
    ended.changed = bool(changed_jobs)
    return ended
