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
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import datetime
from typing import cast

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from catalogue import Message
from clusters.executors.base import Executor, ExecutorError, Failure, TaskHandle, TaskStatus
from clusters.models import Node
from jobs import lifecycle
from jobs.lifecycle import TaskExit
from jobs.logs import masked_tail
from jobs.models import Job, JobState, Task, TaskState
from jobs.protocol.completion import job_outcome
from jobs.protocol.exitspec import LOG_TAIL_BYTES, ExitCode, ExitInfo, classify, exit_info
from jobs.protocol.retry import Retry, job_retry, task_retry
from queries.prepared import ListOf, Prepared
from scheduling import executors
from scheduling import launch as launch_builder
from scheduling.backends import Backends
from scheduling.exits import platform_exit_code
from scheduling.guard import ACTIVE as ACTIVE_TASK_STATES
from scheduling.guard import DATABASE_ERRORS, database_answers, job_guard
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
    # Every ended task's (node name, ports): free now, held a moment longer by a process task's
    # pasta (clusters.executors.netns), so placement gives other ports first.
    ports_freed: list[tuple[str, dict[str, list[int]]]] = field(default_factory=list)


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


@dataclass(frozen=True)
class ExitDecision:
    """How a task attempt ended and what becomes of it (decide_exit)."""

    info: ExitInfo
    exit: TaskExit
    retry: Retry
    node_lost: bool


def decide_exit(
    task: Task, status: TaskStatus, platform_code: int | None = None, *, retry_in_place: bool = True
) -> ExitDecision:
    """Classify how this task attempt ended and decide: retried on its node, or ended (writes
    nothing). retry_in_place=False where the task cannot run again as it was (its Slurm
    allocation ended): then only the job is retried, as the exit spec says."""
    info = classify(
        status.exit_code,
        oom_killed=status.oom_killed,
        platform_exit_code=platform_code if platform_code is not None else platform_exit_code(status.failure),
        # Masked: the line a pattern matched is shown to the job's readers.
        log_tail=masked_tail(task.job, task.log_path, LOG_TAIL_BYTES).decode("utf-8", errors="replace"),
    )
    job = task.job
    node_lost = status.failure is Failure.NODE_LOST
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
    return ExitDecision(info, _task_exit(info, status), decision, node_lost)


def _removal(task: Task, decided: ExitDecision) -> Callable[[Executor], None] | None:
    """Once its exit is recorded: the container/process record's removal (isDebug keeps failed
    ones for inspection), for the task's node; None where there is none to remove."""
    if task.node is None or not task.executor_id or decided.node_lost:
        return None
    keep = launch_builder.is_debug(task.job.normalized) and decided.info.code != 0
    handle = TaskHandle(task.executor_id, task.ip)
    return lambda executor: executor.stop(handle, keep=keep)


def record_exit(
    task: Task, status: TaskStatus, platform_code: int | None = None, *, retry_in_place: bool = True
) -> bool:
    """Classify how this task attempt ended and record it: retried on its node, or ended. True
    when it was retried in place (the next attempt waits, claimed, for the starting phase).
    retry_in_place=False where the task cannot run again as it was (its Slurm allocation
    ended): then only the job is retried, as the exit spec says. (One exit; a pass's exits are
    recorded together: record_exits.)"""
    decided = decide_exit(task, status, platform_code, retry_in_place=retry_in_place)
    job = task.job
    if decided.retry is Retry.NONE:
        retried = False
        lifecycle.end_task(task, job.job_attempt, decided.exit)
    else:
        retried = lifecycle.retry_task(task, job.job_attempt, decided.exit, charged=decided.retry is Retry.CHARGED)
    # Only once its exit is recorded (a pass the database failed before then polls it again):
    # remove the container/process record; isDebug keeps failed ones for inspection.
    removal = _removal(task, decided)
    if removal is not None:
        try:
            removal(executors.node_executor(cast(Node, task.node)))
        except Exception as exc:
            log.warning("removing %s failed: %s", task, exc)
    return retried


def job_completion(job: Job, tasks: list[Task]) -> JobState | None:
    """What the job's tasks make of it by its completion policy: SUCCEEDED, FAILED or None (it goes on)."""
    return job_outcome(job.normalized, [(t.role, t.state) for t in tasks])


def apply_completion_policy(job: Job, backends: Backends) -> None:
    # Re-read: not the config, spec and keys (they never change); as plain values (refresh_from_db
    # builds a queryset with deferred fields and a model instance to copy them from, per job).
    progress = Job.objects.filter(pk=job.pk).values_list(*JOB_PROGRESS_FIELDS).get()
    for name, value in zip(JOB_PROGRESS_FIELDS, progress, strict=True):
        setattr(job, name, value)
    if job.state != JobState.RUNNING:
        return
    tasks = list(job.tasks.select_related("node"))
    outcome = job_completion(job, tasks)
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


RUNNING = TaskStatus(running=True)  # (a task a listing vouched for: not polled)

# The tasks a pass may inspect in full looks (nodes whose event streams cannot vouch for every exit:
# just opened, lost, or due their periodic look). Past it the other nodes' full looks wait for a
# later pass, their streams' exits still handled: 10,000 tasks whose streams opened together made
# one pass of 100 s and more, during which every node's next full look fell due (bench/running_scale.py).
FULL_LOOK_TASKS = 200
_first_node = itertools.count()  # (the node whose full look goes first, moved on each pass)


def _may_have_ended(
    running: list[tuple[int, str, str, int]], nodes: dict[int, Node]
) -> tuple[list[tuple[int, str, str, int]], set[int]]:
    """The running tasks to poll, and the nodes looked at in full: on a node whose executor tells
    which of its tasks ended (a Docker engine's event stream), those; where it cannot tell (a full
    look), every one, while the pass's FULL_LOOK_TASKS last (the first node's full look always: the
    nodes take turns going first, so each one's comes). (A listing of the running containers alone
    does not tell: a container the engine lists as running may hold a task that ended, and taking
    the listing's word held such exits for tens of seconds; with the ends the stream gathered it
    does: _polled.)"""
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
    in_full = {node_id for node_id, ended in seen.items() if ended is None}
    return [row for row in running if (ended := seen[row[3]]) is None or row[1] in ended], in_full


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

_NODES_BY_ID: Prepared[Node] = Prepared(lambda node_ids: Node.objects.filter(pk__in=node_ids), ListOf(int))
_EXITED_TASKS: Prepared[Task] = Prepared(
    lambda task_ids: Task.objects.select_related("job__virtual_cluster").filter(pk__in=task_ids), ListOf(int)
)
_PROGRESS_OF: Prepared[tuple[object, ...]] = Prepared(
    lambda job_ids: Job.objects.filter(pk__in=job_ids).values_list("pk", *JOB_PROGRESS_FIELDS), ListOf(int)
)
_TASKS_OF: Prepared[Task] = Prepared(
    lambda job_ids: Task.objects.filter(job_id__in=job_ids).select_related("node"), ListOf(int)
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
    nodes = {node.pk: node for node in _NODES_BY_ID(list({row[3] for row in running}))} if running else {}
    exits: list[tuple[int, int, TaskStatus]] = []
    for (task_id, _, _, node_id), status in _polled(*_may_have_ended(running, nodes), nodes):
        if status.running:
            continue
        if status.failure is Failure.NODE_LOST:
            suspects.add(node_id)
            continue
        exits.append((task_id, node_id, status))
    completed: set[int] = set()
    if exits:
        completed = record_exits(exits, nodes, backends, ended, changed_jobs)
        meanwhile()
    for job in changed_jobs.values():
        if job.pk in completed:
            continue
        with job_guard(job.pk, backends, "apply its completion policy"):
            apply_completion_policy(job, backends)
        meanwhile()
    ended.changed = bool(changed_jobs)
    return ended


def _polled(
    rows: list[tuple[int, str, str, int]], in_full: set[int], nodes: dict[int, Node]
) -> Iterator[tuple[tuple[int, str, str, int], TaskStatus]]:
    """Each row's task polled on its node: a node's polls as one call on its lane, the nodes side
    by side (executors.side_by_side); on a node looked at in full (`in_full`), after one listing of
    what runs there, only the tasks it does not vouch for (Executor.running_listed). A poll that
    failed is the node's silence (NODE_LOST)."""
    listed: dict[int, set[str]] = {}  # (by node: the tasks its listing vouched for)

    def listing(node_id: int) -> Callable[[Executor], None]:
        def call(executor: Executor) -> None:
            listed[node_id] = executor.running_listed() or set()

        return call

    def poll(node_id: int, handle: TaskHandle) -> Callable[[Executor], TaskStatus]:
        def call(executor: Executor) -> TaskStatus:
            return RUNNING if handle.executor_id in listed.get(node_id, ()) else executor.poll(handle)

        return call

    work: dict[Node, list[Callable[[Executor], TaskStatus | None]]] = {}
    for node_id in in_full:  # (the listing first, its answer left out below)
        work[nodes[node_id]] = [listing(node_id)]
    for _, executor_id, ip, node_id in rows:
        work.setdefault(nodes[node_id], []).append(poll(node_id, TaskHandle(executor_id, ip)))
    answers = executors.side_by_side(work, "poll")
    taken: Counter[int] = Counter({node_id: 1 for node_id in in_full})
    for row in rows:
        task_id, _, _, node_id = row
        answer = answers[node_id][taken[node_id]]
        taken[node_id] += 1
        if isinstance(answer, BaseException):
            log.warning("polling task %s on %s failed: %s", task_id, nodes[node_id].name, answer)
            said = answer.diagnostics if isinstance(answer, ExecutorError) else str(answer)
            answer = TaskStatus(running=False, lost=True, failure=Failure.NODE_LOST, diagnostics=said)
        yield row, cast(TaskStatus, answer)


def record_exits(
    exits: list[tuple[int, int, TaskStatus]],
    nodes: dict[int, Node],
    backends: Backends,
    ended: Ended,
    changed_jobs: dict[int, Job],
) -> set[int]:
    """The exits one pass saw ((task id, its node's id, how it ended)), recorded together: each
    decided (decide_exit), then in ONE transaction their task ends (lifecycle.end_tasks: one
    UPDATE, one INSERT of attempts, one of events), their retries in place, and the completions
    they make that need nothing stopped (every task of the job ended: lifecycle.succeed_all); once
    it committed, their containers' removals and their ended jobs' clean-ups, a lane call per node
    side by side. Nothing reaches a node before the record commits: a crash or a failed write
    before then leaves every exit to be polled again and recorded once (the conditional UPDATEs
    refuse a replay). An exit whose decision raises, and all of them when the batch's write fails
    while the database answers, are recorded one by one under their job's guard (a poison fails
    its job alone). Returns the jobs whose completion policy was applied (the rest are left to
    apply_completion_policy); `changed_jobs` gains every job with an exit."""
    tasks = {task.pk: task for task in _EXITED_TASKS([e[0] for e in exits])}
    batch: list[tuple[Task, TaskStatus, ExitDecision]] = []
    alone: list[tuple[Task, TaskStatus, Exception | None]] = []  # (with what its decision raised)
    for task_id, node_id, status in exits:
        task = tasks.get(task_id)
        if task is None:
            continue  # (deleted meanwhile: nothing to record)
        if task.node_id == node_id:
            task.node = nodes[node_id]  # (read with the running tasks: not again per exit)
        task.job = changed_jobs.setdefault(task.job_id, task.job)  # (one Job per job: its exits see each other's)
        if status.failure is Failure.PORT_CONFLICT:
            ended.ports_held.append((nodes[node_id].name, task.ports, status.diagnostics))
        elif task.ports:
            ended.ports_freed.append((nodes[node_id].name, task.ports))
        try:
            batch.append((task, status, decide_exit(task, status)))
        except Exception as exc:
            alone.append((task, status, exc))  # (raised again under its job's guard: it fails alone)
    completed: dict[int, list[Task]] = {}
    if batch:
        try:
            retried, completed = _write_exits(batch, backends)
        except Exception as exc:
            if isinstance(exc, DATABASE_ERRORS) and not database_answers():
                raise
            log.warning("the pass's %d exits could not be written together (%r); one by one", len(batch), exc)
            alone[:0] = [(task, status, None) for task, status, _ in batch]
            batch, completed = [], {}
        else:
            ended.retried |= retried
            _clean_up(batch, completed)
    for task, status, raised in alone:
        with job_guard(task.job_id, backends, "record how its task ended", task_id=task.pk):
            if raised is not None:
                raise raised
            if record_exit(task, status):
                ended.retried.add((task.pk, task.attempt + 1))
    return set(completed)


def _write_exits(
    batch: list[tuple[Task, TaskStatus, ExitDecision]], backends: Backends
) -> tuple[set[tuple[int, int]], dict[int, list[Task]]]:
    """The batch's records in one transaction (record_exits): the task attempts retried in place,
    and the jobs whose completion was applied (with their tasks)."""
    retried = set()
    with transaction.atomic():
        lifecycle.end_tasks([(task, task.job.job_attempt, d.exit) for task, _, d in batch if d.retry is Retry.NONE])
        for task, _, d in batch:
            if d.retry is not Retry.NONE:
                charged = d.retry is Retry.CHARGED
                if lifecycle.retry_task(task, task.job.job_attempt, d.exit, charged=charged):
                    retried.add((task.pk, task.attempt + 1))
        completed = _complete_together({task.job_id: task.job for task, _, _ in batch}, backends)
    return retried, completed


def _complete_together(jobs: dict[int, Job], backends: Backends) -> dict[int, list[Task]]:
    """The completion policy of the jobs whose tasks have all ended (nothing to stop first, no
    backend's hold to end), in the caller's transaction: their progress and tasks read in one
    query each, the successes written together. The jobs done with (their tasks): those that
    succeeded, go on, or left RUNNING; the others (a failure, a retry, tasks to stop) are left to
    apply_completion_policy."""
    progress = {row[0]: row[1:] for row in _PROGRESS_OF(list(jobs))}
    tasks_of: dict[int, list[Task]] = {}
    for task in _TASKS_OF(list(jobs)):
        tasks_of.setdefault(task.job_id, []).append(task)
    done: dict[int, list[Task]] = {}
    succeeding = []
    for job_id, job in jobs.items():
        for name, value in zip(JOB_PROGRESS_FIELDS, progress[job_id], strict=True):
            setattr(job, name, value)
        tasks = tasks_of.get(job_id, [])
        if job.state != JobState.RUNNING:
            done[job_id] = []
            continue
        if any(task.state in ACTIVE_TASK_STATES for task in tasks) or backends.owner(job.virtual_cluster) is not None:
            continue
        try:
            outcome = job_completion(job, tasks)
        except Exception as exc:  # (applied again under its job's guard: it fails alone)
            log.info("job %s: its completion policy raised %r; applied by itself", job_id, exc)
            continue
        if outcome is None:
            done[job_id] = []
        elif outcome == JobState.SUCCEEDED:
            succeeding.append(job_id)
            done[job_id] = tasks
    for job_id in set(succeeding) - set(lifecycle.succeed_all(succeeding)):
        done[job_id] = []  # (left RUNNING meanwhile: nothing of it to clean up here)
    return done


def _clean_up(batch: list[tuple[Task, TaskStatus, ExitDecision]], completed: dict[int, list[Task]]) -> None:
    """Once the batch committed: each exit's container removed, and each ended job's tasks stopped
    and its node-side leftovers cleaned up (stop_job's work), a lane call per node, side by side.
    What fails is reconciled once the node answers (its lane's missed_cleanup)."""
    work: dict[Node, list[Callable[[Executor], None]]] = {}
    for task, _, decided in batch:
        removal = _removal(task, decided)
        if removal is not None:
            work.setdefault(cast(Node, task.node), []).append(removal)
    for job_id, tasks in completed.items():
        job_nodes: dict[int, Node] = {}
        for task in tasks:
            if task.node is None:
                continue
            job_nodes[task.node.pk] = task.node
            if task.executor_id:
                handle = TaskHandle(task.executor_id, task.ip)
                work.setdefault(task.node, []).append(lambda executor, handle=handle: executor.stop(handle))  # type: ignore[misc]
        for node in job_nodes.values():
            work.setdefault(node, []).append(lambda executor, job_id=job_id: executor.cleanup_job(job_id))  # type: ignore[misc]
    by_id = {node.pk: node for node in work}
    for node_id, answers in executors.side_by_side(work, "stop").items():
        failures = [answer for answer in answers if isinstance(answer, BaseException)]
        for failure in failures[:3]:
            log.warning("removing or cleaning up on %s failed: %s", by_id[node_id].name, failure)
        if failures and (lane := executors.lane_of(by_id[node_id])) is not None:
            lane.missed_cleanup = True  # (the heartbeat reconciles the node once it answers)
