"""The nodes as the scheduler sees them: the heartbeat (a silent node is marked down and its tasks
recorded as lost; one that answers again is taken back) and the reconcile (what a node runs against
what the database says: adopt a start that was never recorded, remove what belongs to no task)."""

from __future__ import annotations

import logging
import random
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

from django.conf import settings
from django.db.models import QuerySet
from django.utils import timezone

from catalogue import Message, joined
from catalogue.reasons import Reason
from clusters.executors.base import Executor, Failure, RunningTask, TaskStatus
from clusters.models import Node, down_reason_fields
from jobs import lifecycle
from jobs.models import Job, JobState, Task, TaskState
from scheduling import ending, executors
from scheduling import launch as launch_builder
from scheduling.backends import Backends

log = logging.getLogger("pai.scheduler")

ROUNDS = 10  # the heartbeat looks for nodes due this many times a period

# A job in these states may hold a network on a node where it has a task: reconcile leaves it alone.
HOLDING_JOB_STATES = (JobState.RUNNING, JobState.STOPPING)


def set_down(node: Node, reason: Reason) -> bool:
    """Mark the node down with its reason, once (False when it already was)."""
    if not Node.objects.filter(pk=node.pk, down_since__isnull=True).update(
        down_since=timezone.now(), **down_reason_fields(reason)
    ):
        return False
    log.warning("node %s is down: %s", node.name, joined(reason))
    return True


def mark_node_down(node: Node, reason: Reason, backends: Backends) -> None:
    """Placement skips the node from now on; each task it was running is recorded as lost (the
    exit spec's transient -1001), so its job is retried elsewhere, free of charge."""
    if not set_down(node, reason):
        return
    tasks = Task.objects.filter(node=node, state=TaskState.RUNNING, job__state=JobState.RUNNING)
    jobs: dict[int, Job] = {}
    for task in tasks.select_related("node", "job"):
        diagnostics = Message.of("exit.node_lost", node=node.name, reason=reason)
        lost = TaskStatus(running=False, lost=True, failure=Failure.NODE_LOST, diagnostics=diagnostics)
        ending.record_exit(task, lost)
        jobs[task.job_id] = task.job
    for job in jobs.values():
        ending.apply_completion_policy(job, backends)


def reconcile(backends: Backends) -> set[tuple[int, int]]:
    """After a start (or a failed pass): adopt tasks that were started but not recorded, remove
    what belongs to no active task, and finish jobs whose exits were recorded but whose completion
    was not (a crash between the two). Returns the task attempts claimed but found on no node
    ((task id, attempt)): the starting phase starts them."""
    unstarted = set()
    # (every node's active tasks in one query, not one per node: 1,000 nodes were 3,000 queries)
    by_node: dict[int, list[Task]] = {}
    for task in _active_tasks(Task.objects.filter(node__isnull=False)):
        by_node.setdefault(task.node_id, []).append(task)  # type: ignore[arg-type]
    # Each node's listing and its leftovers', side by side (at 500 nodes, one after another, they
    # were most of a restart's first pass); starts running past their deadline read first.
    every = list(Node.objects.all())
    starting = {node.pk: _starting(node) for node in every}
    held = executors.side_by_side({node: [_list_running] for node in every}, "list_running")
    leftovers = executors.side_by_side({node: [_leftover_jobs] for node in every}, "leftover_jobs")
    for node in every:
        listed = Listed(starting[node.pk], held[node.pk][0], leftovers[node.pk][0])
        unstarted |= {(task.pk, task.attempt) for task in reconcile_node(node, by_node.get(node.pk, []), listed)}
    # (only jobs with an ended task can have an outcome: not one look per running job, 10,000 at scale)
    ended = (TaskState.SUCCEEDED, TaskState.FAILED)
    for job in Job.objects.filter(state=JobState.RUNNING, tasks__state__in=ended).distinct():
        ending.apply_completion_policy(job, backends)
    return unstarted


def _active_tasks(tasks: QuerySet[Task]) -> QuerySet[Task]:
    """Of these, the tasks that should be running (their job too), with their job and node."""
    return tasks.filter(state=TaskState.RUNNING, job__state=JobState.RUNNING).select_related("job", "node").order_by()


@dataclass(frozen=True)
class Listed:
    """What a node was asked before its reconcile (reconcile asks every node's side by side): the
    starts running on it then, its running tasks, its jobs' leftovers (or what each call raised)."""

    starting: set[str]
    running: list[RunningTask] | BaseException
    leftovers: set[int] | BaseException


def _starting(node: Node) -> set[str]:
    """The node's starts running past their deadline: their tasks are neither adopted nor started again yet."""
    executor = executors.node_executor(node)
    return executor.lane.starting() if isinstance(executor, executors.Bulkheaded) else set()


def _list_running(executor: Executor) -> list[RunningTask]:
    return executor.list_running()


def _leftover_jobs(executor: Executor) -> set[int]:
    return executor.leftover_jobs()


def reconcile_node(node: Node, active: list[Task] | None = None, listed: Listed | None = None) -> list[Task]:
    """Adopt this node's unrecorded starts and remove its orphans; returns the tasks claimed for
    it that it does not run (never started). `active`: its tasks that should be running, when
    the caller read them already (reconcile reads every node's at once); `listed`: what the
    node said, when the caller asked it already (else it is asked here)."""
    executor = executors.node_executor(node)
    starting = listed.starting if listed is not None else _starting(node)
    try:
        if listed is None:
            held = executor.list_running()
        elif isinstance(listed.running, BaseException):
            raise listed.running
        else:
            held = listed.running
    except Exception as exc:  # an unreachable engine: its tasks are polled (and lost) later
        log.warning("reconcile: node %s unreachable: %s", node.name, exc)
        if (lane := executors.lane_of(node)) is not None:
            lane.missed_cleanup = True  # (reconciled by the heartbeat once it answers)
        return []
    by_key = {(r.labels.get("pai.job-id"), r.labels.get("pai.role"), r.labels.get("pai.index")): r for r in held}
    if active is None:
        active = list(_active_tasks(Task.objects.filter(node=node)))
    wanted = set()
    never_started = []
    for task in active:
        found = by_key.get((str(task.job_id), task.role, str(task.index)))
        if executors.start_key(task.job_id, task.role, task.index, task.job.job_attempt, task.attempt) in starting:
            if found:
                wanted.add(found.handle.executor_id)
            continue
        if (
            found
            and found.labels.get("pai.task-attempt") == str(task.attempt)
            and found.labels.get("pai.job-attempt") == str(task.job.job_attempt)
        ):
            wanted.add(found.handle.executor_id)
            if not task.executor_id and lifecycle.adopt_task(task, found.handle.executor_id, node.name):
                log.info("reconcile: adopted %s", task)
        elif not task.executor_id:
            log.info("reconcile: %s was claimed but never started; starting it", task)
            never_started.append(task)
    orphaned_jobs = set()
    for running in held:
        if running.handle.executor_id not in wanted and not _is_recorded(running.handle.executor_id):
            log.info("reconcile: removing orphan %s %s", running.handle.executor_id, running.labels)
            executors.node_executor(node).stop(running.handle)
            orphaned_jobs.add(running.labels.get("pai.job-id", ""))
    orphans = {int(i) for i in orphaned_jobs if i.isdigit()}
    _sweep_leftovers(node, executor, orphans, listed.leftovers if listed is not None else None)
    return never_started


def _sweep_leftovers(
    node: Node, executor: Executor, orphaned_jobs: set[int], listed: set[int] | BaseException | None = None
) -> None:
    """The node-side leftovers (networks) of jobs that no longer run on the node: those of its
    orphans, and every one it holds (a clean-up that failed or ran past its deadline, one that a
    crash never sent; `listed`: as the caller asked it already). One that fails again is tried
    again at the next reconcile of the node."""
    try:
        if isinstance(listed, BaseException):
            raise listed
        jobs = orphaned_jobs | (listed if listed is not None else executor.leftover_jobs())
    except Exception as exc:
        log.warning("reconcile: cannot list %s's leftovers: %s", node.name, exc)
        return
    if not jobs:
        return  # (nothing left behind: the usual case, no query)
    # (A job claimed for the node keeps its network from prepare_job on; a stopping one is torn down.)
    here = set(Task.objects.filter(node=node, job__state__in=HOLDING_JOB_STATES).values_list("job_id", flat=True))
    debug = {job.pk: launch_builder.is_debug(job.normalized) for job in Job.objects.filter(pk__in=jobs - here)}
    for job_id in sorted(jobs - here):
        try:
            executor.cleanup_job(job_id, keep=debug.get(job_id, False))
        except Exception as exc:
            log.warning("reconcile: cleaning up job %s on %s failed: %s; again later", job_id, node.name, exc)


def _is_recorded(executor_id: str) -> bool:
    return Task.objects.filter(executor_id=executor_id, state=TaskState.RUNNING).exists()


class Heartbeat:
    """Pings every node's engine (side by side, each on its node's lane: scheduling.executors) each
    PAI_NODE_HEARTBEAT_SECONDS, or at once when a poll found a node silent (a suspect). A node
    answers by any call that returns, not only pings; a node whose engine answers nothing for
    PAI_NODE_DOWN_AFTER_SECONDS is down by the next heartbeat. Each node keeps a clock of its own,
    staggered after its first ping: a pass pings the nodes due (a share of them every
    1/ROUNDS of the period), not all 500 in one pass every period."""

    def __init__(self) -> None:
        # When each node last answered a ping and was first seen (monotonic seconds; a fresh
        # scheduler gives every node a full grace period), and when each was seen down.
        self._answered: dict[int, float] = {}
        self._first_seen: dict[int, float] = {}
        self._seen_down: dict[int, float] = {}
        self._last_heartbeat = float("-inf")
        self._due: dict[int, float] = {}  # when each node is pinged next (monotonic seconds)
        self.suspects: set[int] = set()  # nodes a poll found silent: pinged next pass

    def check(self, backends: Backends) -> bool:
        """A node silent for PAI_NODE_DOWN_AFTER_SECONDS is marked down and its running tasks
        recorded as lost; a down node that answers again is taken back. Returns True when the
        cluster changed (placement must look again)."""
        now = time.monotonic()
        period = settings.PAI_NODE_HEARTBEAT_SECONDS
        if now - self._last_heartbeat < period / ROUNDS and not self.suspects:
            return False
        self._last_heartbeat = now
        ours = Node.objects.exclude(executor__in=backends.node_kinds()).order_by()  # backends watch their own
        # (the nodes due read whole, the others not at all: a round pings a tenth of 1,000 nodes)
        ids = list(ours.values_list("pk", flat=True))
        due = [pk for pk in ids if pk in self.suspects or now >= self._due.get(pk, now)]
        nodes = list((ours if len(due) == len(ids) else ours.filter(pk__in=due)).order_by("name")) if due else []
        suspects, self.suspects = self.suspects, set()
        for node in nodes:  # (after a node's first ping, its next within one period: the nodes spread)
            self._due[node.pk] = now + period * (random.uniform(0.5, 1.0) if node.pk not in self._due else 1.0)
        nodes = [node for node in nodes if node.pk in suspects or not _answered_lately(node, now - period / 2)]
        if not nodes:
            return False
        # Each waits one call deadline at most (a silent node's ping is a probe, not waited for).
        with ThreadPoolExecutor(max_workers=min(16, len(nodes))) as pool:
            answers = list(pool.map(executors.ping, nodes))
        changed = False
        for node, error in zip(nodes, answers, strict=True):
            lane = executors.lane_of(node)
            first_seen = self._first_seen.setdefault(node.pk, now)
            if error is None:
                self._answered[node.pk] = now
            answered = max(self._answered.get(node.pk, float("-inf")), (lane and lane.last_answer) or float("-inf"))
            if node.down_since is not None:
                went_down = self._seen_down.setdefault(node.pk, now)
                if error is None or answered > went_down:
                    changed |= self._take_back(node, lane)
                continue
            self._seen_down.pop(node.pk, None)
            if error is None:
                if lane is not None and lane.missed_cleanup:  # stops it did not take while silent
                    _clean_up(node, lane)
                continue
            silent_for = now - max(answered, first_seen)
            if silent_for >= settings.PAI_NODE_DOWN_AFTER_SECONDS:
                mark_node_down(node, [Message.of("node.silent_for", seconds=round(silent_for), error=error)], backends)
                self._seen_down[node.pk] = now
                changed = True
        return changed

    def _take_back(self, node: Node, lane: executors.Lane | None) -> bool:
        Node.objects.filter(pk=node.pk).update(down_since=None, **down_reason_fields([]))
        self._seen_down.pop(node.pk, None)
        log.info("node %s answers again; schedulable", node.name)
        # What it ran before it went silent was recorded lost: removed before new work comes.
        _clean_up(node, lane)
        return True


def _answered_lately(node: Node, since: float) -> bool:
    """Whether the node's engine answered a call of its lane since then (monotonic seconds): as
    good as a ping's answer (at 500 busy nodes the pings were a fourteenth of the engine calls).
    Not for a node that is down (its ping is the probe that takes it back) or has a clean-up to
    reconcile (a ping's answer starts it)."""
    lane = executors.lane_of(node)
    return (
        node.down_since is None
        and lane is not None
        and not lane.missed_cleanup
        and lane.last_answer is not None
        and lane.last_answer >= since
    )


def _clean_up(node: Node, lane: executors.Lane | None) -> None:
    """Reconcile a node that answers again: each call on its lane, within its deadline; what it
    does not take now, a later heartbeat does (the lane remembers)."""
    if lane is not None:
        lane.missed_cleanup = False
    try:
        reconcile_node(node)
    except Exception as exc:
        log.warning("reconcile of %s failed: %s; again once it answers", node.name, exc)
        if lane is not None:
            lane.missed_cleanup = True
