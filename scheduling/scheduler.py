"""The scheduler loop: the one place that joins the database, placement and the executors.

Each pass: take the lease (one active scheduler), reconcile after a start or a failed pass, carry
out stop requests, poll running tasks and apply exits (task retry, completion policy, job retry),
then place waiting jobs and start their tasks. Executor calls never run inside a DB transaction;
every state change goes through jobs.lifecycle, whose conditional UPDATEs make a crash at any
point lose no job and start no task twice.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import signal
import socket
import time
import uuid
from collections import defaultdict, deque
from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any, NamedTuple

from django.conf import settings
from django.db import IntegrityError, close_old_connections, connection
from django.db.models import Count, Max, Q, QuerySet
from django.utils import timezone

from clusters.executors.base import Executor, ExecutorError, Failure, TaskHandle, TaskLaunch, TaskStatus
from clusters.executors.registry import executor_for
from clusters.models import Node, SchedulerLease
from clusters.placement import JobRequest, PortRequest, TaskPlacement, TaskRequest, place
from jobs import lifecycle
from jobs.crypto import decrypt_text
from jobs.lifecycle import Placement, TaskExit
from jobs.logs import read_tail
from jobs.models import Job, JobState, Task, TaskState
from jobs.protocol.completion import job_outcome
from jobs.protocol.exitspec import ExitCode, ExitInfo, classify, exit_info
from jobs.protocol.retry import Retry, job_retry, task_retry
from jobs.protocol.v1 import port_begin_at
from jobs.ssh import ports_with_ssh
from scheduling import launch as launch_builder
from scheduling import quota
from scheduling import slurm as slurm_backend
from scheduling.exits import platform_exit_code
from scheduling.recent_trouble import RecentTrouble
from scheduling.storage_gate import MountFailures, storage_gate

log = logging.getLogger("pai.scheduler")

LEASE_NAME = "main"
LEASE_TTL = timedelta(seconds=15)
LEASE_RENEW_AFTER = LEASE_TTL / 3
WAITING_BATCH = 2000


class WaitingJob(NamedTuple):
    """A queued job as placement needs it (the spec comes from the scheduler's SpecCache)."""

    pk: int
    vc: str
    priority: int
    created_at: datetime
    pending_reason: str


WAITING_COLUMNS = ("pk", "virtual_cluster__name", "priority", "created_at", "pending_reason")
# A pass stops launching after this long and leaves the rest to the next pass (placement runs
# again at once), so stop requests and exits are never stuck behind a thousand launches.
LAUNCH_BUDGET_S = 0.5
# Jobs launched together: read in one query, claimed one by one, their tasks started side by side.
LAUNCH_BATCH = 16
# The exit spec matches patterns ("command not found") against this much of a task's log.
LOG_TAIL_BYTES = 4096
# How often an idle scheduler wakes: to notice SIGTERM, and, while a Slurm job's tasks are
# reporting where they landed (each holds its Slurm slot until launched), to launch them at once.
IDLE_CHECK_S = 0.05
SLURM_REPORTS_CHECK_S = 0.01
# What a job's progress changes (re-read before deciding its outcome).
JOB_PROGRESS_FIELDS = (
    "state",
    "execution_type",
    "job_attempt",
    "retries_used",
    "transient_retries",
    "exit_code",
    "completed_at",
    "updated_at",
)
# A port that another program on the node holds (a start failed with exit 253) is kept out of
# placement on that node for this long, so the retry gets other ports instead of the same clash.
PORT_CONFLICT_AVOID_S = 600.0


def _start_one(item: tuple[Task, Executor, TaskLaunch]) -> TaskHandle | Exception:
    """Start one task (on a pool thread): its handle, or the exception, for the loop to record."""
    _, executor, launch = item
    try:
        return executor.start(launch)
    except Exception as exc:
        return exc


def _ping(node: Node) -> str | None:
    """None when the node's backend answers, else why not (on a pool thread)."""
    try:
        node_executor(node).ping()
    except Exception as exc:
        return str(exc)
    return None


def _set_down(node: Node, reason: str) -> bool:
    """Mark the node down with its reason, once (False when it already was)."""
    if not Node.objects.filter(pk=node.pk, down_since__isnull=True).update(
        down_since=timezone.now(), down_reason=reason
    ):
        return False
    log.warning("node %s is down: %s", node.name, reason)
    return True


def node_executor(node: Node) -> Executor:
    return executor_for(node.executor, node.address, node.docker_url)


def task_requests(spec: dict[str, Any]) -> list[TaskRequest]:
    begin_at = port_begin_at(spec)
    requests = []
    for role, role_spec in spec["taskRoles"].items():
        res = role_spec["resourcePerInstance"]
        # A role without ports still gets one (`http`, as OpenPAI gave seed 002's jobs, whose
        # commands read PAI_CURRENT_CONTAINER_PORT) and every task one for its sshd.
        wanted = ports_with_ssh(res.get("ports") or {"http": 1})
        ports = [
            PortRequest(label=label, count=count, begin_at=(begin_at.get(role) or {}).get(label, 0))
            for label, count in wanted.items()
        ]
        for index in range(role_spec["instances"]):
            requests.append(
                TaskRequest(
                    role=role, index=index, cpu=res["cpu"], memory_mb=res["memoryMB"], gpu=res["gpu"], ports=ports
                )
            )
    return requests


def _task_exit(info: ExitInfo, diagnostics: str, finished_at: Any) -> TaskExit:
    return TaskExit(
        exit_code=info.code,
        user_exit_code=info.user_code,
        phrase=info.phrase,
        diagnostics=f"{info.phrase}: {diagnostics or info.reason}" if info.code else "",
        finished_at=finished_at or timezone.now(),
    )


class Scheduler:
    def __init__(self, holder: str | None = None):
        self.holder = holder or f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:6]}"
        self.reconciled = False
        self.stopping = False
        self._last_queue_signature: tuple[int, Any] | None = None
        self._lease_row_exists = False
        self._lease_renewed_at = float("-inf")  # monotonic seconds of the last renewal that held
        # Node heartbeat: when each node last answered (monotonic seconds; a fresh scheduler
        # gives every node a full grace period), and when the nodes were last pinged.
        self._last_answer: dict[int, float] = {}
        self._last_heartbeat = float("-inf")
        self._suspects: set[int] = set()  # nodes a poll found silent: pinged next pass
        self._specs = quota.SpecCache()
        self._task_requests: dict[int, list[TaskRequest]] = {}
        # Jobs placed by the last placement but not launched within its pass's budget: launched
        # by the next passes before placement runs again (resources only grew meanwhile).
        self._unlaunched: deque[tuple[int, list[TaskPlacement]]] = deque()
        self._unlaunched_nodes: dict[str, Node] = {}
        self._port_conflicts = RecentTrouble(PORT_CONFLICT_AVOID_S)  # ports others held, by node
        self._mount_failures = MountFailures()  # which node could not mount which storage, lately
        self.slurm = slurm_backend.SlurmBackend(self._mount_failures)

    # ---- the lease -------------------------------------------------------------------------
    def take_lease(self) -> bool:
        """True while this scheduler holds the lease. A lease renewed less than LEASE_RENEW_AFTER
        ago is still ours (no one may take it before it expires): no write on every pass."""
        if time.monotonic() - self._lease_renewed_at < LEASE_RENEW_AFTER.total_seconds():
            return True
        renewing_at = time.monotonic()
        now = timezone.now()
        if not self._lease_row_exists:
            with contextlib.suppress(IntegrityError):  # created by the other scheduler at the same moment
                SchedulerLease.objects.get_or_create(name=LEASE_NAME)
            self._lease_row_exists = True
        taken = (
            SchedulerLease.objects.filter(name=LEASE_NAME)
            .filter(Q(holder=self.holder) | Q(holder="") | Q(expires_at__isnull=True) | Q(expires_at__lt=now))
            .update(holder=self.holder, expires_at=now + LEASE_TTL)
        )
        self._lease_renewed_at = renewing_at if taken == 1 else float("-inf")
        return taken == 1

    def release_lease(self) -> None:
        self._lease_renewed_at = float("-inf")
        SchedulerLease.objects.filter(name=LEASE_NAME, holder=self.holder).update(holder="", expires_at=None)

    # ---- the pass --------------------------------------------------------------------------
    def run_once(self) -> bool:
        """One pass. Returns True when it did any work (the loop then goes again at once)."""
        if not connection.in_atomic_block:  # (tests run a pass inside their transaction)
            close_old_connections()
        if not self.take_lease():
            return False
        if not self.reconciled:
            self.reconcile()
            self.reconciled = True
        # Slurm jobs whose tasks all reported hold their slots until launched: before anything else.
        launched = self.slurm.launch_ready(self)
        nodes_changed = self.check_nodes()
        stopped = self.carry_out_stop_requests()
        exited = self.monitor_running() or nodes_changed
        placed = self.schedule_waiting(resources_freed=stopped or exited)
        launched |= self.slurm.launch_ready(self)  # (reported while the pass ran)
        slurm_changed = self.slurm.run_pass(self)
        return launched or stopped or exited or placed or slurm_changed

    def idle_wait(self, seconds: float) -> None:
        """Sleep between idle passes; wake early to stop, or when a Slurm job's tasks have all
        reported (a cheap check: a few directory listings)."""
        deadline = time.monotonic() + seconds
        while not self.stopping and time.monotonic() < deadline:
            if self.slurm.probes_ready():
                return
            time.sleep(min(SLURM_REPORTS_CHECK_S if self.slurm.awaiting_reports else IDLE_CHECK_S, seconds))

    def run_forever(self, interval: float | None = None) -> None:
        idle_sleep = settings.PAI_SCHEDULER_INTERVAL if interval is None else interval

        def finish_pass_and_exit(signum: int, frame: Any) -> None:
            log.info("signal %s: finishing the current pass, then exiting", signum)
            self.stopping = True

        signal.signal(signal.SIGTERM, finish_pass_and_exit)
        signal.signal(signal.SIGINT, finish_pass_and_exit)
        log.info("scheduler %s started", self.holder)
        try:
            while not self.stopping:
                try:
                    busy = self.run_once()
                except Exception:
                    log.exception("scheduler pass failed; reconciling and retrying")
                    self.reconciled = False  # whatever the pass left half done, the next one mends
                    busy = False
                if not busy:
                    self.idle_wait(idle_sleep)
        finally:
            self.release_lease()
            log.info("scheduler %s stopped", self.holder)

    # ---- reconcile -------------------------------------------------------------------------
    def reconcile(self) -> None:
        """After a start (or a failed pass): adopt tasks that were started but not recorded, start
        those claimed but never started, remove what belongs to no active task, and finish jobs
        whose exits were recorded but whose completion was not (a crash between the two)."""
        for node in Node.objects.all():
            self._reconcile_node(node)
        for job in Job.objects.filter(state=JobState.RUNNING):
            self.apply_completion_policy(job)

    def _reconcile_node(self, node: Node) -> None:
        try:
            held = node_executor(node).list_running()
        except Exception as exc:  # an unreachable engine: its tasks are polled (and lost) later
            log.warning("reconcile: node %s unreachable: %s", node.name, exc)
            return
        by_key = {(r.labels.get("pai.job-id"), r.labels.get("pai.role"), r.labels.get("pai.index")): r for r in held}
        active = Task.objects.filter(node=node, state=TaskState.RUNNING, job__state=JobState.RUNNING)
        wanted = set()
        for task in active.select_related("job", "node"):
            found = by_key.get((str(task.job_id), task.role, str(task.index)))
            if (
                found
                and found.labels.get("pai.task-attempt") == str(task.attempt)
                and found.labels.get("pai.job-attempt") == str(task.job.job_attempt)
            ):
                wanted.add(found.handle.executor_id)
                if not task.executor_id and lifecycle.adopt_task(task, found.handle.executor_id):
                    log.info("reconcile: adopted %s", task)
            elif not task.executor_id:
                log.info("reconcile: %s was claimed but never started; starting it", task)
                self.start_tasks(task.job, [task])
        orphaned_jobs = set()
        for running in held:
            if running.handle.executor_id not in wanted and not self._is_recorded(running.handle.executor_id):
                log.info("reconcile: removing orphan %s %s", running.handle.executor_id, running.labels)
                node_executor(node).stop(running.handle)
                orphaned_jobs.add(running.labels.get("pai.job-id", ""))
        # Their jobs' node-side leftovers too (networks), unless the job runs there now.
        for job in Job.objects.filter(pk__in=[int(i) for i in orphaned_jobs if i.isdigit()]).exclude(
            pk__in=active.values("job_id")
        ):
            node_executor(node).cleanup_job(job.pk, keep=launch_builder.is_debug(job.spec))

    def _is_recorded(self, executor_id: str) -> bool:
        return Task.objects.filter(executor_id=executor_id, state=TaskState.RUNNING).exists()

    # ---- node health -----------------------------------------------------------------------
    def check_nodes(self) -> bool:
        """The heartbeat: ping every node's engine (side by side, short timeouts); a node silent
        for PAI_NODE_DOWN_AFTER_SECONDS is marked down and its running tasks recorded as lost; a
        down node that answers again is taken back. Returns True when the cluster changed (placement
        must look again)."""
        now = time.monotonic()
        if now - self._last_heartbeat < settings.PAI_NODE_HEARTBEAT_SECONDS and not self._suspects:
            return False
        self._last_heartbeat = now
        self._suspects.clear()
        nodes = list(Node.objects.exclude(executor=Node.Executor.SLURM))  # Slurm watches its own
        if not nodes:
            return False
        with ThreadPoolExecutor(max_workers=min(16, len(nodes))) as pool:
            answers = list(pool.map(_ping, nodes))
        changed = False
        for node, error in zip(nodes, answers, strict=True):
            if error is None:
                self._last_answer[node.pk] = now
                if node.down_since is not None:
                    Node.objects.filter(pk=node.pk).update(down_since=None, down_reason="")
                    log.info("node %s answers again; schedulable", node.name)
                    # What it ran before it went silent was recorded lost: remove it before new work comes.
                    self._reconcile_node(node)
                    changed = True
                continue
            silent_for = now - self._last_answer.setdefault(node.pk, now)
            if node.down_since is None and silent_for >= settings.PAI_NODE_DOWN_AFTER_SECONDS:
                self.mark_node_down(node, f"did not answer for {silent_for:.0f} s: {error}")
                changed = True
        return changed

    def mark_node_down(self, node: Node, reason: str) -> None:
        """Placement skips the node from now on; each task it was running is recorded as lost
        (the exit spec's transient -1001), so its job is retried elsewhere, free of charge."""
        if not _set_down(node, reason):
            return
        tasks = Task.objects.filter(node=node, state=TaskState.RUNNING, job__state=JobState.RUNNING)
        jobs: dict[int, Job] = {}
        for task in tasks.select_related("node", "job"):
            lost = TaskStatus(
                running=False, lost=True, failure=Failure.NODE_LOST, diagnostics=f"node {node.name} {reason}"
            )
            self.record_exit(task, lost)
            jobs[task.job_id] = task.job
        for job in jobs.values():
            self.apply_completion_policy(job)

    # ---- stop requests ---------------------------------------------------------------------
    def carry_out_stop_requests(self) -> bool:
        jobs = list(
            Job.objects.filter(execution_type=Job.ExecutionType.STOP, state__in=[JobState.WAITING, JobState.RUNNING])
            | Job.objects.filter(state=JobState.STOPPING)
        )
        info = classify(None, stopped=True)
        for job in jobs:
            if not lifecycle.begin_stopping(job):
                continue  # it finished meanwhile
            self.stop_executors(job)
            lifecycle.finish_stopping(job, info.code, f"{info.phrase}: stopped at the user's request.")
        return bool(jobs)

    def stop_executors(self, job: Job, *, keep: bool = False, tasks: list[Task] | None = None) -> None:
        """Stop every task of the job that holds something on a node, then the job's node-side
        leftovers (networks). keep=True leaves failed containers for inspection (isDebug). A Slurm
        VC's job attempt is cancelled in Slurm too (its allocation). `tasks` (the job's tasks with
        their nodes) are read from the database unless given."""
        tasks = tasks if tasks is not None else list(job.tasks.select_related("node"))
        # (Unless every task succeeded: their steps are ending by themselves.)
        if job.virtual_cluster.slurm_partition and any(task.state != TaskState.SUCCEEDED for task in tasks):
            self.slurm.cancel(job)
        nodes = {}
        for task in tasks:
            if task.node is None:
                continue
            nodes[task.node_id] = task.node
            if task.executor_id:
                try:
                    node_executor(task.node).stop(TaskHandle(task.executor_id, task.ip), keep=keep)
                except Exception as exc:
                    log.warning("stopping %s failed: %s", task, exc)
        for node in nodes.values():
            try:
                node_executor(node).cleanup_job(job.pk, keep=keep)
            except Exception as exc:
                log.warning("cleanup of %s on %s failed: %s", job, node, exc)

    # ---- monitoring ------------------------------------------------------------------------
    def monitor_running(self) -> bool:
        self._restart_unrecorded_starts()
        # Only what a poll needs, as plain values; the task and its job are read once it exited.
        running = list(
            Task.objects.filter(state=TaskState.RUNNING, job__state=JobState.RUNNING, node__isnull=False)
            .exclude(executor_id="")
            .values_list("pk", "executor_id", "ip", "node_id")
        )
        nodes = {node.pk: node for node in Node.objects.filter(pk__in={row[3] for row in running})} if running else {}
        changed_jobs: dict[int, Job] = {}
        for task_id, executor_id, ip, node_id in running:
            node = nodes[node_id]
            try:
                status = node_executor(node).poll(TaskHandle(executor_id, ip))
            except Exception as exc:
                log.warning("polling task %s on %s failed: %s", task_id, node.name, exc)
                status = TaskStatus(running=False, lost=True, failure=Failure.NODE_LOST, diagnostics=str(exc))
            if status.running:
                continue
            if status.failure is Failure.NODE_LOST:
                self._suspects.add(node_id)  # the heartbeat decides whether the node is down
                continue
            task = Task.objects.select_related("node", "job__virtual_cluster").get(pk=task_id)
            task.job = changed_jobs.get(task.job_id, task.job)
            self.record_exit(task, status)
            changed_jobs[task.job_id] = task.job
            self.slurm.launch_ready(self)  # a Slurm slot waits on each launch; an exit's record can wait
        for job in changed_jobs.values():
            self.apply_completion_policy(job)
            self.slurm.launch_ready(self)
        return bool(changed_jobs)

    def _restart_unrecorded_starts(self) -> None:
        """Tasks claimed for a launch whose start was never recorded (a crash mid-start that the
        reconcile at start-up did not see): reconcile their nodes, which adopts or starts them."""
        unrecorded = Task.objects.filter(state=TaskState.RUNNING, executor_id="", job__state=JobState.RUNNING)
        for node in Node.objects.filter(pk__in=unrecorded.values("node_id")):
            self._reconcile_node(node)

    def record_exit(
        self, task: Task, status: TaskStatus, platform_code: int | None = None, *, retry_in_place: bool = True
    ) -> None:
        """Classify how this task attempt ended and record it: retried on its node, or ended.
        retry_in_place=False where the task cannot run again as it was (its Slurm allocation
        ended): then only the job is retried, as the exit spec says."""
        info = classify(
            status.exit_code,
            oom_killed=status.oom_killed,
            platform_exit_code=platform_code if platform_code is not None else platform_exit_code(status.failure),
            log_tail=read_tail(task.log_path, LOG_TAIL_BYTES),
        )
        job = task.job
        node_lost = status.failure is Failure.NODE_LOST
        if task.node is not None and task.executor_id and not node_lost:
            try:  # remove the container/process record; isDebug keeps failed ones for inspection
                keep = launch_builder.is_debug(job.spec) and info.code != 0
                node_executor(task.node).stop(TaskHandle(task.executor_id, task.ip), keep=keep)
            except Exception as exc:
                log.warning("removing %s failed: %s", task, exc)
        exit = _task_exit(info, status.diagnostics, status.finished_at)
        # A task on a lost node, or whose ports another program holds, is not retried as it was:
        # its job is, placed again (on the nodes that answer, avoiding the clashing ports).
        decision = (
            Retry.NONE
            if node_lost or status.failure is Failure.PORT_CONFLICT or not retry_in_place
            else task_retry(
                code=info.code,
                behaviour=info.behaviour,
                retries=task.retries,
                allowed=job.spec["taskRoles"][task.role].get("taskRetryCount") or 0,
                transient_used=job.transient_retries,
                transient_cap=settings.PAI_MAX_TRANSIENT_RETRIES,
            )
        )
        if decision is Retry.NONE:
            lifecycle.end_task(task, job.job_attempt, exit)
            return
        if lifecycle.retry_task(task, job.job_attempt, exit, charged=decision is Retry.CHARGED):
            task.refresh_from_db()
            job.refresh_from_db()
            self.start_tasks(job, [task])

    def apply_completion_policy(self, job: Job) -> None:
        job.refresh_from_db(fields=JOB_PROGRESS_FIELDS)  # not the config, spec and keys: they never change
        if job.state != JobState.RUNNING:
            return
        tasks = list(job.tasks.select_related("node"))
        outcome = job_outcome(job.spec, [(t.role, t.state) for t in tasks])
        if outcome is None:
            return
        if outcome == JobState.SUCCEEDED:
            self.stop_executors(job, tasks=tasks)
            lifecycle.succeed(job, ExitCode.FRAMEWORK_ATTEMPT_COMPLETION)
            return
        failed = [t for t in tasks if t.state == TaskState.FAILED]
        trigger = max(failed, key=lambda t: t.finished_at or timezone.now()) if failed else tasks[0]
        info = exit_info(trigger.exit_code if trigger.exit_code is not None else 255, trigger.user_exit_code)
        decision = job_retry(
            behaviour=info.behaviour,
            retries_used=job.retries_used,
            allowed=job.spec.get("jobRetryCount") or 0,
            transient_used=job.transient_retries,
            transient_cap=settings.PAI_MAX_TRANSIENT_RETRIES,
        )
        self.stop_executors(job, keep=launch_builder.is_debug(job.spec), tasks=tasks)
        if decision is Retry.NONE:
            lifecycle.fail(job, trigger, ExitCode.FRAMEWORK_ATTEMPT_COMPLETION)
        else:
            lifecycle.requeue_for_retry(
                job,
                trigger,
                charged=decision is Retry.CHARGED,
                leftover_exit_code=ExitCode.FRAMEWORK_ATTEMPT_COMPLETION,
            )

    # ---- placing and starting --------------------------------------------------------------
    def schedule_waiting(self, *, resources_freed: bool = True) -> bool:
        """Place waiting jobs. Skipped when nothing changed since the last placement: no job was
        submitted or requeued and no resources were freed (placement would answer the same)."""
        if self._unlaunched:
            self._launch_within_budget()
            return True
        queue = Job.objects.filter(
            state=JobState.WAITING, execution_type=Job.ExecutionType.START, virtual_cluster__slurm_partition=""
        )
        signature = self._queue_signature(queue)
        if not resources_freed and signature == self._last_queue_signature:
            return False
        # The queue as plain values: a model per waiting job each pass is most of a pass's cost.
        waiting = list(queue.order_by("-priority", "created_at", "id").values_list(*WAITING_COLUMNS)[:WAITING_BATCH])
        if not waiting:
            self._last_queue_signature = signature
            return False
        rows = [WaitingJob(*row) for row in waiting]
        specs = self._specs.get_many(row.pk for row in rows)
        nodes = list(Node.objects.all())
        node_states, vc_states = quota.cluster_state(nodes, self._specs)
        now = time.monotonic()
        for state in node_states:  # ports another program held lately: other ports this time
            state.ports_used.update(self._port_conflicts.on(state.name, now))
        gate = storage_gate(((row.pk, specs[row.pk]) for row in rows), nodes, self._mount_failures)
        requests = [self._job_request(row, specs[row.pk], gate.avoid) for row in rows if row.pk not in gate.blocked]
        result = place(node_states, vc_states, requests)
        for job_id, note in gate.notes.items():
            if job_id in result.pending:
                result.pending[job_id] += f" (avoiding nodes that cannot mount its storage: {note})"
        result.pending.update(gate.blocked)
        self._unlaunched = deque(result.placed.items())
        self._unlaunched_nodes = {node.name: node for node in nodes}
        self._launch_within_budget()
        down = "; ".join(
            f"node {n.name} is down ({n.down_reason})"
            for n in nodes
            if n.down_since is not None and n.executor != Node.Executor.SLURM
        )
        said = {row.pk: row.pending_reason for row in rows}
        reasons = {job_id: f"{reason}; {down}" if down else reason for job_id, reason in result.pending.items()}
        lifecycle.set_pending_reasons({job_id: reason for job_id, reason in reasons.items() if said[job_id] != reason})
        # Recorded after our own writes (pending reasons bump updated_at), so an unchanged queue
        # next pass really means nothing new arrived. After a launch the next pass looks again:
        # a start that failed may have put its job back in the queue already.
        self._last_queue_signature = None if result.placed else self._queue_signature(queue)
        return bool(result.placed)

    @staticmethod
    def _queue_signature(queue: QuerySet[Job]) -> tuple[int, Any]:
        """(how many wait, the newest change among them), in one query."""
        found = queue.aggregate(count=Count("pk"), newest=Max("updated_at"))
        return found["count"], found["newest"]

    def _launch_within_budget(self) -> None:
        """Launch placed jobs until LAUNCH_BUDGET_S is spent; the rest wait for the next pass."""
        deadline = time.monotonic() + LAUNCH_BUDGET_S
        while self._unlaunched and time.monotonic() <= deadline:
            # The jobs read a few at a time (one query each few), fresh enough for their claims.
            chunk = [self._unlaunched.popleft() for _ in range(min(LAUNCH_BATCH, len(self._unlaunched)))]
            jobs = Job.objects.select_related("virtual_cluster", "owner").in_bulk([job_id for job_id, _ in chunk])
            batch = [(jobs[job_id], placements) for job_id, placements in chunk if job_id in jobs]  # (deleted?)
            self.launch_jobs(batch, self._unlaunched_nodes)

    def _job_request(
        self, job: WaitingJob, spec: dict[str, Any], avoid: dict[int, frozenset[str]] | None = None
    ) -> JobRequest:
        """Placement's view of a waiting job; its tasks built once per job (a spec never changes)."""
        tasks = self._task_requests.get(job.pk)
        if tasks is None:
            if len(self._task_requests) > quota.SpecCache.LIMIT:
                self._task_requests.clear()
            tasks = self._task_requests[job.pk] = task_requests(spec)
        return JobRequest(
            key=job.pk,
            vc=job.vc,
            tasks=tasks,
            gpu_type=(spec.get("extras") or {}).get("gpuType"),
            priority=job.priority,
            order=job.created_at.timestamp(),
            avoid=(avoid or {}).get(job.pk, frozenset()),
        )

    def launch_jobs(self, batch: list[tuple[Job, list[TaskPlacement]]], node_by_name: dict[str, Node]) -> None:
        """Claim each job of the batch, then start all their tasks side by side (a start waits on
        its node's engine or on a process being made, not on this loop)."""
        by_id = {node.pk: node for node in node_by_name.values()}
        starts: list[tuple[Job, list[tuple[Task, Executor, TaskLaunch]]]] = []
        for job, placements in batch:
            tasks = lifecycle.claim_for_launch(
                job,
                [Placement(p.role, p.index, node_by_name[p.node].pk, p.gpus, p.ports) for p in placements],
                where=", ".join(sorted({p.node for p in placements})),
            )
            if tasks is None:
                continue  # another scheduler, or a stop, got there first
            for task in tasks:
                task.node = by_id[task.node_id] if task.node_id is not None else None
            ready = self.assign_addresses(job, tasks)
            starts.append((job, self._launches(job, ready, tasks)))
        self._start_side_by_side(starts)

    def assign_addresses(self, job: Job, tasks: list[Task]) -> list[Task]:
        """Ask each node's executor for the tasks' addresses before any starts (host lists).
        Returns the tasks that may start; a node that cannot prepare the job fails its tasks."""
        per_node: dict[int, list[Task]] = defaultdict(list)
        for task in tasks:
            if task.node_id is not None:
                per_node[task.node_id].append(task)
        ready = []
        host_network = launch_builder.spans_nodes(tasks)
        for node_tasks in per_node.values():
            node = node_tasks[0].node
            assert node is not None
            try:
                ips = node_executor(node).prepare_job(
                    job.pk,
                    job.full_name,
                    [(t.role, t.index) for t in node_tasks],
                    node.address,
                    host_network=host_network,
                )
            except Exception as exc:
                for task in node_tasks:
                    self._start_failed(job, task, exc)
                continue
            for task in node_tasks:
                task.ip = ips.get((task.role, task.index), node.address)
                ready.append(task)
        return ready

    def start_tasks(self, job: Job, tasks: Iterable[Task], everyone: list[Task] | None = None) -> None:
        """Start tasks of a job side by side; `everyone` (all the job's tasks, with addresses) is
        read from the database unless the caller has it."""
        everyone = everyone if everyone is not None else list(job.tasks.all())
        self._start_side_by_side([(job, self._launches(job, tasks, everyone))])

    def _launches(
        self, job: Job, tasks: Iterable[Task], everyone: list[Task]
    ) -> list[tuple[Task, Executor, TaskLaunch]]:
        """What to start for each task, its address and log recorded first (a task whose launch
        cannot be built is recorded as failed)."""
        secrets = json.loads(decrypt_text(job.secrets_encrypted) or "{}")
        ready: list[tuple[Task, Executor, TaskLaunch]] = []
        for task in tasks:
            if task.node is None:
                continue
            try:
                launch = launch_builder.build_launch(job, task, everyone, secrets)
            except Exception as exc:
                self._start_failed(job, task, exc)
                continue
            task.log_path = str(launch.log_path)
            ready.append((task, node_executor(task.node), launch))
        lifecycle.set_task_launches([task for task, _, _ in ready])
        return ready

    def _start_side_by_side(self, starts: list[tuple[Job, list[tuple[Task, Executor, TaskLaunch]]]]) -> None:
        """Start every task of these jobs side by side: the engines do the work, the loop only
        waits. Database writes stay on this thread. One task needs no pool thread."""
        items = [(job, item) for job, ready in starts for item in ready]
        if len(items) > 1:
            with ThreadPoolExecutor(max_workers=min(settings.PAI_MAX_PARALLEL_STARTS, len(items))) as pool:
                outcomes = list(pool.map(_start_one, [item for _, item in items]))
        else:
            outcomes = [_start_one(item) for _, item in items]
        # Starts are recorded before failures are handled: a failure may end or requeue the
        # job, and then every started task must be known to be stopped.
        results = [(job, task, outcome) for (job, (task, _, _)), outcome in zip(items, outcomes, strict=True)]
        lifecycle.record_tasks_started(
            [
                (task, outcome.executor_id, outcome.ip, task.node.name if task.node else "")
                for _, task, outcome in results
                if not isinstance(outcome, Exception)
            ]
        )
        for job, task, outcome in results:
            if isinstance(outcome, Exception):
                self._start_failed(job, task, outcome)

    def _start_failed(self, job: Job, task: Task, exc: Exception) -> None:
        """Record a task that could not start: an ExecutorError says which platform failure;
        anything else is a portal bug, logged with its traceback and recorded as -1204."""
        if isinstance(exc, ExecutorError):
            code, message = platform_exit_code(exc.failure), str(exc)
            if exc.failure is Failure.NODE_LOST and task.node is not None:
                _set_down(task.node, message)
            if exc.failure is Failure.STORAGE_MOUNT_FAILED and exc.storage and task.node is not None:
                self._mount_failures.remember(task.node.name, exc.storage, str(exc))
            if exc.failure is Failure.PORT_CONFLICT and task.node is not None:
                for port in (port for ports in task.ports.values() for port in ports):
                    self._port_conflicts.remember(task.node.name, port, message)
        else:
            log.error("starting %s failed", task, exc_info=exc)
            code, message = int(ExitCode.CONTAINER_START_FAILED), f"could not start the task: {exc}"
        if task.log_path:
            Path(task.log_path).parent.mkdir(parents=True, exist_ok=True)
            with open(task.log_path, "a") as log_file:
                log_file.write(f"[pai-portal] {message}\n")
        failure = exc.failure if isinstance(exc, ExecutorError) else None
        status = TaskStatus(running=False, diagnostics=message, failure=failure)
        self.record_exit(task, status, platform_code=code)
        self.apply_completion_policy(job)
