"""The scheduler loop: the one place that joins the database, placement and the executors.

Each pass: take the lease (one active scheduler), reconcile once after start, carry out stop
requests, poll running tasks and apply exits (task retry, completion policy, job retry), then place
waiting jobs and start their tasks. Executor calls never run inside a DB transaction; every state
change is a conditional UPDATE, so a crash at any point loses no job and starts no task twice.
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
from collections import defaultdict
from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor
from datetime import timedelta
from pathlib import Path
from typing import Any

from django.conf import settings
from django.db import IntegrityError, close_old_connections, connection, transaction
from django.db.models import F, Max, Q
from django.utils import timezone

from clusters import launch as launch_builder
from clusters import quota
from clusters.executors.base import Executor, ExecutorError, TaskHandle, TaskLaunch, TaskStatus
from clusters.executors.registry import executor_for
from clusters.models import Node, SchedulerLease
from clusters.placement import JobRequest, PortRequest, TaskPlacement, TaskRequest, place
from jobs.crypto import decrypt_text
from jobs.models import Job, JobEvent, JobState, Task, TaskState
from jobs.protocol.completion import SUCCEEDED, job_outcome
from jobs.protocol.exitspec import ExitInfo, classify, exit_info
from jobs.ssh import ports_with_ssh

log = logging.getLogger("pai.scheduler")

LEASE_NAME = "main"
LEASE_TTL = timedelta(seconds=15)
# Transient failures are retried without charging the user, but not forever.
MAX_TRANSIENT_RETRIES = int(os.environ.get("PAI_MAX_TRANSIENT_RETRIES", "5"))
WAITING_BATCH = 2000
# Containers of one job started at once (the engine serializes little of container start).
MAX_PARALLEL_STARTS = int(os.environ.get("PAI_MAX_PARALLEL_STARTS", "8"))
LOG_TAIL_BYTES = 4096
# Exit code of tasks still running when their job completed (the exit spec's -220).
FRAMEWORK_ATTEMPT_COMPLETION = -220


def _start_one(item: tuple[Task, Executor, TaskLaunch]) -> TaskHandle | Exception:
    """Start one task (on a pool thread): its handle, or the exception, for the loop to record."""
    _, executor, launch = item
    try:
        return executor.start(launch)
    except Exception as exc:
        return exc


def node_executor(node: Node) -> Executor:
    return executor_for(node.executor, node.address, node.docker_url)


def task_requests(spec: dict[str, Any]) -> list[TaskRequest]:
    begin_at = ((spec.get("extras") or {}).get("v1") or {}).get("portBeginAt") or {}
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


def read_log_tail(path: str, size: int = LOG_TAIL_BYTES) -> str:
    if not path:
        return ""
    try:
        with open(path, "rb") as log_file:
            log_file.seek(0, os.SEEK_END)
            log_file.seek(max(0, log_file.tell() - size))
            return log_file.read().decode("utf-8", "replace")
    except OSError:
        return ""


def _event(job_id: int, kind: str, message: str) -> None:
    JobEvent.objects.create(job_id=job_id, kind=kind, message=message)


class Scheduler:
    def __init__(self, holder: str | None = None):
        self.holder = holder or f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:6]}"
        self.reconciled = False
        self.stopping = False
        self._last_queue_signature: tuple[int, Any] | None = None
        self._lease_row_exists = False

    # ---- the lease -------------------------------------------------------------------------
    def take_lease(self) -> bool:
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
        return taken == 1

    def release_lease(self) -> None:
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
        stopped = self.carry_out_stop_requests()
        exited = self.monitor_running()
        placed = self.schedule_waiting(resources_freed=stopped or exited)
        return stopped or exited or placed

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
                    log.exception("scheduler pass failed; retrying")
                    busy = False
                if not busy:
                    deadline = time.monotonic() + idle_sleep
                    while not self.stopping and time.monotonic() < deadline:
                        time.sleep(min(0.05, idle_sleep))
        finally:
            self.release_lease()
            log.info("scheduler %s stopped", self.holder)

    # ---- reconcile -------------------------------------------------------------------------
    def reconcile(self) -> None:
        """After a start: adopt tasks that were started but not recorded, start those claimed but
        never started, and remove what belongs to no active task."""
        for node in Node.objects.all():
            try:
                held = node_executor(node).list_running()
            except Exception as exc:  # an unreachable engine: its tasks are polled (and lost) later
                log.warning("reconcile: node %s unreachable: %s", node.name, exc)
                continue
            by_key = {
                (r.labels.get("pai.job-id"), r.labels.get("pai.role"), r.labels.get("pai.index")): r for r in held
            }
            active = Task.objects.filter(node=node, state=TaskState.RUNNING, job__state=JobState.RUNNING)
            wanted = set()
            for task in active.select_related("job"):
                key = (str(task.job_id), task.role, str(task.index))
                found = by_key.get(key)
                if (
                    found
                    and found.labels.get("pai.task-attempt") == str(task.attempt)
                    and found.labels.get("pai.job-attempt") == str(task.job.job_attempt)
                ):
                    wanted.add(found.handle.executor_id)
                    if not task.executor_id:
                        Task.objects.filter(pk=task.pk, executor_id="").update(
                            executor_id=found.handle.executor_id, started_at=timezone.now()
                        )
                        log.info("reconcile: adopted %s", task)
                elif not task.executor_id:
                    log.info("reconcile: %s was claimed but never started; starting it", task)
                    self.start_tasks(task.job, [task])
            for running in held:
                if running.handle.executor_id not in wanted and not self._is_recorded(running.handle.executor_id):
                    log.info("reconcile: removing orphan %s %s", running.handle.executor_id, running.labels)
                    node_executor(node).stop(running.handle)

    def _is_recorded(self, executor_id: str) -> bool:
        return Task.objects.filter(executor_id=executor_id, state=TaskState.RUNNING).exists()

    # ---- stop requests ---------------------------------------------------------------------
    def carry_out_stop_requests(self) -> bool:
        jobs = list(
            Job.objects.filter(execution_type=Job.ExecutionType.STOP, state__in=[JobState.WAITING, JobState.RUNNING])
            | Job.objects.filter(state=JobState.STOPPING)
        )
        for job in jobs:
            Job.objects.filter(pk=job.pk).update(state=JobState.STOPPING)
            info = classify(None, stopped=True)
            self.stop_job_tasks(job, final_state=TaskState.STOPPED, exit_code=info.code)
            Job.objects.filter(pk=job.pk).update(
                state=JobState.STOPPED,
                exit_code=info.code,
                exit_diagnostics=f"{info.phrase}: stopped at the user's request.",
                completed_at=timezone.now(),
                pending_reason="",
            )
            _event(job.pk, "stopped", "All tasks stopped.")
        return bool(jobs)

    def stop_job_tasks(
        self, job: Job, *, final_state: str | None, keep: bool = False, exit_code: int | None = None
    ) -> None:
        """Stop every task of the job that holds something; mark unfinished ones final_state
        with exit_code (-210 for a user's stop, -220 when the job completed around them)."""
        tasks = list(job.tasks.select_related("node"))
        nodes = {}
        for task in tasks:
            if task.node is not None:
                nodes[task.node_id] = task.node
            if task.node is not None and task.executor_id:
                try:
                    node_executor(task.node).stop(TaskHandle(task.executor_id, task.ip), keep=keep)
                except Exception as exc:
                    log.warning("stopping %s failed: %s", task, exc)
        for node in nodes.values():
            try:
                node_executor(node).cleanup_job(job.pk, keep=keep)
            except Exception as exc:
                log.warning("cleanup of %s on %s failed: %s", job, node, exc)
        if final_state:
            job.tasks.filter(state__in=[TaskState.WAITING, TaskState.RUNNING]).update(
                state=final_state, exit_code=exit_code, finished_at=timezone.now()
            )

    # ---- monitoring ------------------------------------------------------------------------
    def monitor_running(self) -> bool:
        tasks = list(
            Task.objects.filter(state=TaskState.RUNNING, job__state=JobState.RUNNING)
            .exclude(executor_id="")
            .select_related("node", "job")
        )
        changed_jobs: dict[int, Job] = {}
        for task in tasks:
            if task.node is None:
                continue
            try:
                status = node_executor(task.node).poll(TaskHandle(task.executor_id, task.ip))
            except Exception as exc:
                log.warning("polling %s failed: %s", task, exc)
                status = TaskStatus(running=False, lost=True, platform_exit_code=-1000, diagnostics=str(exc))
            if status.running:
                continue
            self.record_exit(task, status)
            changed_jobs[task.job_id] = task.job
        for job in changed_jobs.values():
            self.apply_completion_policy(job)
        return bool(changed_jobs)

    def record_exit(self, task: Task, status: TaskStatus) -> None:
        info = classify(
            status.exit_code,
            oom_killed=status.oom_killed,
            platform_exit_code=status.platform_exit_code,
            log_tail=read_log_tail(task.log_path),
        )
        job = task.job
        is_debug = launch_builder.is_debug(job.spec)
        if task.node is not None and task.executor_id:
            try:  # remove the container/process record; isDebug keeps failed ones for inspection
                node_executor(task.node).stop(TaskHandle(task.executor_id, task.ip), keep=is_debug and info.code != 0)
            except Exception as exc:
                log.warning("removing %s failed: %s", task, exc)
        diagnostics = status.diagnostics or info.reason
        exit_fields = {
            "exit_code": info.code,
            "user_exit_code": info.user_code,
            "exit_diagnostics": f"{info.phrase}: {diagnostics}" if info.code else "",
            "finished_at": status.finished_at or timezone.now(),
        }
        retry_counted = self._task_retry(task, job, info)
        if retry_counted is not None:
            updated = Task.objects.filter(pk=task.pk, attempt=task.attempt).update(
                attempt=F("attempt") + 1,
                retries=F("retries") + (1 if retry_counted else 0),
                executor_id="",
                started_at=None,
                **exit_fields,
            )
            if not retry_counted:
                Job.objects.filter(pk=job.pk).update(transient_retries=F("transient_retries") + 1)
            if updated:
                kind = "charged to taskRetryCount" if retry_counted else "transient, not charged"
                _event(
                    job.pk,
                    "task-retry",
                    f"{task.role}-{task.index} exited {info.code} ({info.phrase}); retrying ({kind}).",
                )
                task.refresh_from_db()
                self.start_tasks(job, [task])
            return
        state = TaskState.SUCCEEDED if info.code == 0 else TaskState.FAILED
        Task.objects.filter(pk=task.pk, attempt=task.attempt).update(state=state, **exit_fields)
        _event(job.pk, "task-exit", f"{task.role}-{task.index} exited {info.code} ({info.phrase}).")

    def _task_retry(self, task: Task, job: Job, info: ExitInfo) -> bool | None:
        """None: no retry; True: a retry charged to taskRetryCount; False: a free (transient) one."""
        if info.code == 0:
            return None
        if info.behaviour == "transient" and job.transient_retries < MAX_TRANSIENT_RETRIES:
            return False
        allowed = job.spec["taskRoles"][task.role].get("taskRetryCount") or 0
        if info.behaviour != "permanent" and task.retries < allowed:
            return True
        return None

    def apply_completion_policy(self, job: Job) -> None:
        job.refresh_from_db()
        if job.state != JobState.RUNNING:
            return
        tasks = list(job.tasks.all())
        outcome = job_outcome(job.spec, [(t.role, t.state) for t in tasks])
        if outcome is None:
            return
        if outcome == SUCCEEDED:
            self.stop_job_tasks(job, final_state=TaskState.STOPPED, exit_code=FRAMEWORK_ATTEMPT_COMPLETION)
            Job.objects.filter(pk=job.pk, state=JobState.RUNNING).update(
                state=JobState.SUCCEEDED,
                exit_code=0,
                user_exit_code=0,
                exit_diagnostics="",
                completed_at=timezone.now(),
            )
            _event(job.pk, "succeeded", "The job succeeded.")
            return
        failed = [t for t in tasks if t.state == TaskState.FAILED]
        trigger = max(failed, key=lambda t: t.finished_at or timezone.now()) if failed else tasks[0]
        info = exit_info(trigger.exit_code if trigger.exit_code is not None else 255, trigger.user_exit_code)
        allowed = job.spec.get("jobRetryCount") or 0
        transient = info.behaviour == "transient" and job.transient_retries < MAX_TRANSIENT_RETRIES
        charged = info.behaviour == "unknown" and job.retries_used < allowed
        self.stop_job_tasks(job, final_state=None, keep=launch_builder.is_debug(job.spec))
        if transient or charged:
            self.requeue_for_retry(job, trigger, charged=charged)
            return
        job.tasks.filter(state__in=[TaskState.WAITING, TaskState.RUNNING]).update(
            state=TaskState.STOPPED, exit_code=FRAMEWORK_ATTEMPT_COMPLETION, finished_at=timezone.now()
        )
        Job.objects.filter(pk=job.pk, state=JobState.RUNNING).update(
            state=JobState.FAILED,
            exit_code=trigger.exit_code,
            user_exit_code=trigger.user_exit_code,
            exit_diagnostics=f"{trigger.role}-{trigger.index}: {trigger.exit_diagnostics}",
            completed_at=timezone.now(),
        )
        _event(job.pk, "failed", f"The job failed: {trigger.role}-{trigger.index} exited {trigger.exit_code}.")

    def requeue_for_retry(self, job: Job, trigger: Task, *, charged: bool) -> None:
        with transaction.atomic():
            Job.objects.filter(pk=job.pk).update(
                state=JobState.WAITING,
                retries_used=F("retries_used") + (1 if charged else 0),
                transient_retries=F("transient_retries") + (0 if charged else 1),
                pending_reason="Waiting to be placed again for a retry.",
            )
            job.tasks.update(
                state=TaskState.WAITING, node=None, executor_id="", ip="", ports={}, gpus=[], attempt=0, retries=0
            )
            kind = "charged to jobRetryCount" if charged else "transient, not charged"
            _event(
                job.pk,
                "job-retry",
                f"{trigger.role}-{trigger.index} exited {trigger.exit_code}; retrying the whole job ({kind}).",
            )

    # ---- placing and starting --------------------------------------------------------------
    def schedule_waiting(self, *, resources_freed: bool = True) -> bool:
        """Place waiting jobs. Skipped when nothing changed since the last placement: no job was
        submitted or requeued and no resources were freed (placement would answer the same)."""
        queue = Job.objects.filter(state=JobState.WAITING, execution_type=Job.ExecutionType.START)
        signature = (queue.count(), queue.aggregate(newest=Max("updated_at"))["newest"])
        if not resources_freed and signature == self._last_queue_signature:
            return False
        waiting = list(
            queue.select_related("virtual_cluster", "owner").order_by("-priority", "created_at", "id")[:WAITING_BATCH]
        )
        if not waiting:
            self._last_queue_signature = signature
            return False
        nodes = list(Node.objects.prefetch_related("gpus__gpu_type"))
        node_states, vc_states = quota.cluster_state(nodes)
        requests = [
            JobRequest(
                key=job.pk,
                vc=job.virtual_cluster.name,
                tasks=task_requests(job.spec),
                gpu_type=(job.spec.get("extras") or {}).get("gpuType"),
                priority=job.priority,
                order=job.created_at.timestamp(),
            )
            for job in waiting
        ]
        result = place(node_states, vc_states, requests)
        by_id = {job.pk: job for job in waiting}
        node_by_name = {node.name: node for node in nodes}
        for job_id, placements in result.placed.items():
            self.launch_job(by_id[job_id], placements, node_by_name)
        for job_id, reason in result.pending.items():
            if by_id[job_id].pending_reason != reason:
                Job.objects.filter(pk=job_id, state=JobState.WAITING).update(pending_reason=reason)
        # Recorded after our own writes (pending reasons bump updated_at), so an unchanged queue
        # next pass really means nothing new arrived.
        self._last_queue_signature = (queue.count(), queue.aggregate(newest=Max("updated_at"))["newest"])
        return bool(result.placed)

    def launch_job(self, job: Job, placements: list[TaskPlacement], node_by_name: dict[str, Node]) -> None:
        with transaction.atomic():
            claimed = Job.objects.filter(
                pk=job.pk, state=JobState.WAITING, execution_type=Job.ExecutionType.START
            ).update(
                state=JobState.RUNNING,
                job_attempt=F("job_attempt") + 1,
                launched_at=timezone.now(),
                pending_reason="",
            )
            if not claimed:
                return  # another scheduler, or a stop, got there first
            for placement in placements:
                Task.objects.filter(job=job, role=placement.role, index=placement.index).update(
                    state=TaskState.RUNNING,
                    node=node_by_name[placement.node],
                    gpus=placement.gpus,
                    ports=placement.ports,
                    attempt=1,
                    executor_id="",
                    exit_code=None,
                    user_exit_code=None,
                    exit_diagnostics="",
                    started_at=None,
                    finished_at=None,
                )
            where = ", ".join(sorted({p.node for p in placements}))
            _event(job.pk, "placed", f"Placed {len(placements)} task(s) on {where}.")
        job.refresh_from_db()
        tasks = list(job.tasks.select_related("node"))
        self.assign_addresses(job, tasks)
        self.start_tasks(job, tasks)

    def assign_addresses(self, job: Job, tasks: list[Task]) -> None:
        """Ask each node's executor for the tasks' addresses before any starts (host lists)."""
        per_node: dict[int, list[Task]] = defaultdict(list)
        for task in tasks:
            if task.node_id is not None:
                per_node[task.node_id].append(task)
        for node_tasks in per_node.values():
            node = node_tasks[0].node
            assert node is not None
            ips = node_executor(node).prepare_job(
                job.pk, job.full_name, [(t.role, t.index) for t in node_tasks], node.address
            )
            for task in node_tasks:
                task.ip = ips.get((task.role, task.index), node.address)
                Task.objects.filter(pk=task.pk).update(ip=task.ip)

    def start_tasks(self, job: Job, tasks: Iterable[Task]) -> None:
        everyone = list(job.tasks.all())
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
            Task.objects.filter(pk=task.pk).update(log_path=str(launch.log_path))
            task.log_path = str(launch.log_path)
            ready.append((task, node_executor(task.node), launch))
        # The tasks of a gang start side by side: the engine does the work, the loop only waits.
        # Database writes stay on this thread. One task needs no pool thread.
        if len(ready) > 1:
            with ThreadPoolExecutor(max_workers=min(MAX_PARALLEL_STARTS, len(ready))) as pool:
                outcomes = list(pool.map(_start_one, ready))
        else:
            outcomes = [_start_one(item) for item in ready]
        for (task, _, _), outcome in zip(ready, outcomes, strict=True):
            if isinstance(outcome, Exception):
                self._start_failed(job, task, outcome)
                continue
            Task.objects.filter(pk=task.pk, attempt=task.attempt, executor_id="").update(
                executor_id=outcome.executor_id, ip=outcome.ip or task.ip, started_at=timezone.now()
            )
            assert task.node is not None
            _event(
                job.pk,
                "task-started",
                f"{task.role}-{task.index} started on {task.node.name} (attempt {task.attempt}).",
            )

    def _start_failed(self, job: Job, task: Task, exc: Exception) -> None:
        """Record a task that could not start: an ExecutorError carries its exit code; anything
        else is a portal bug, logged with its traceback and recorded as -1204."""
        if isinstance(exc, ExecutorError):
            code, message = exc.exit_code, str(exc)
        else:
            log.error("starting %s failed", task, exc_info=exc)
            code, message = -1204, f"could not start the task: {exc}"
        if task.log_path:
            Path(task.log_path).parent.mkdir(parents=True, exist_ok=True)
            with open(task.log_path, "a") as log_file:
                log_file.write(f"[pai-portal] {message}\n")
        self.record_exit(task, TaskStatus(running=False, platform_exit_code=code, diagnostics=message))
        self.apply_completion_policy(job)
