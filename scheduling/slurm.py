"""Slurm VCs in the scheduler loop: where the database meets clusters.slurm.

A VC with a Slurm partition is never placed by the portal. Each pass, for all such VCs at once:
one `squeue` (every portal job Slurm knows in their partitions) and, every
PAI_SLURM_NODES_SECONDS, one `sinfo` (their nodes, synced into Node rows so pages, quotas and
tasks name them). Then, per waiting job:

- not in Slurm's queue under its name `<PAI_SLURM_JOB_PREFIX>-<id>-<attempt>`: submitted (sbatch), the whole gang as
  one Slurm job. A restarted scheduler finds the job by that name and submits nothing twice.
- pending in Slurm: Slurm's reason in the portal's words is the job's pending reason.
- running in Slurm, every task's wrapper has said where it landed (probe files): claimed with
  those nodes, GPUs and ports (lifecycle.claim_for_launch), each task's launch built as for any
  node (scheduling.launch) and handed to its wrapper by the Slurm nodes' executor.

Running jobs are followed like any others (the executor reads the tasks' exit records); a Slurm
job that ended before its tasks' exits were recorded ends them as Slurm says (node failure,
preemption, out of memory...). Stopping a job, and the end of a job attempt, cancel its Slurm job.

Every call to Slurm goes to its controller's lane (scheduling.slurm_controller): a controller that
does not answer holds no pass, and past PAI_NODE_DOWN_AFTER_SECONDS its partitions show
unavailable. A cancel it did not take is not lost: the sweep (after a fresh scheduler's first
squeue, and after any cancel that went unanswered) cancels every Slurm job still active whose name
`<prefix>-<id>-<attempt>` is no attempt its portal job still wants (a stopped or failed job's, an
attempt a retry left behind): the rows are the memory, so a restart forgets nothing.
"""

from __future__ import annotations

import json
import logging
import os
import sys
import time
from collections import defaultdict
from dataclasses import dataclass
from typing import Any

from django.conf import settings
from django.db.models import QuerySet
from django.utils import timezone

from catalogue import Message
from catalogue.reasons import Reason, stored_parts
from clusters.executors.base import TaskHandle
from clusters.executors.process import PROJECT_ROOT
from clusters.job_files import slurm_job_dir
from clusters.models import Node, VirtualCluster
from clusters.slurm import client, commands
from clusters.slurm.exits import status_after
from clusters.slurm.reasons import (
    FINAL_REASONS,
    Ask,
    PartitionUse,
    expected_start,
    final_reason,
    is_final_refusal,
    pending_reason,
    refusal_reason,
)
from clusters.slurm.status import SlurmJob, SlurmNode, parse_nodes, parse_queue
from clusters.slurm_nodes import sync_nodes
from jobs import lifecycle
from jobs.lifecycle import Placement
from jobs.logs import read_tail
from jobs.models import Job, JobState, Task, TaskState
from jobs.protocol.exitspec import ExitCode
from jobs.protocol.priority import slurm_nice
from jobs.protocol.spec import NormalizedSpec
from jobs.protocol.spec import gpu_type as spec_gpu_type
from jobs.protocol.timelimit import slurm_time
from queries.prepared import Prepared
from scheduling import ending, executors
from scheduling.backends import Backends
from scheduling.executors import NodeSilent
from scheduling.guard import job_guard
from scheduling.quota import task_requests
from scheduling.slurm_controller import Controller, show_available, show_unavailable
from scheduling.starting import Starter
from scheduling.storage_gate import storage_gate
from scheduling.terminating import grace_of

log = logging.getLogger("pai.scheduler.slurm")

# A job Slurm refused (sbatch failed) is offered again after this long, not every pass.
RESUBMIT_AFTER_S = 30.0
# How often a job attempt is submitted again when its Slurm job ends before its tasks start.
EARLY_ENDS_ALLOWED = 3


@dataclass(frozen=True)
class RoleTasks:
    request: commands.RoleRequest
    port_labels: list[tuple[str, int]]  # (label, count), in the order the probe's ports are handed out


def slurm_roles(spec: NormalizedSpec) -> list[RoleTasks]:
    """The job's roles as Slurm is asked for them, with the ports each task needs (placement's
    TaskRequests: the same ports a portal node would give, the sshd's included)."""
    tasks = task_requests(spec)
    roles: dict[str, RoleTasks] = {}
    for task in tasks:
        if task.role in roles:
            continue
        port_labels = [(port.label, port.count) for port in task.ports]
        roles[task.role] = RoleTasks(
            commands.RoleRequest(
                role=task.role,
                instances=spec["taskRoles"][task.role]["instances"],
                cpu=task.cpu,
                memory_mb=task.memory_mb,
                gpu=task.gpu,
                ports=sum(count for _, count in port_labels),
            ),
            port_labels,
        )
    return list(roles.values())


def job_ask(roles: list[commands.RoleRequest]) -> Ask:
    return Ask(
        tasks=sum(r.instances for r in roles),
        gpus=sum(r.instances * r.gpu for r in roles),
        cpus=sum(r.instances * r.cpu for r in roles),
        memory_mb=sum(r.instances * r.memory_mb for r in roles),
    )


def _waiting_job(pk: int) -> Job:
    return Job.objects.select_related("virtual_cluster", "owner").get(pk=pk)


def _slurm_vcs() -> QuerySet[VirtualCluster]:
    return VirtualCluster.objects.exclude(slurm_partition="")


# Each Slurm VC's partition, by the VC's pk (read every pass: its SQL compiled once).
_PARTITION_OF: Prepared[tuple[int, str]] = Prepared(lambda: _slurm_vcs().values_list("pk", "slurm_partition"))


class SlurmBackend:
    """The Backend (scheduling.backends) of the VCs with a Slurm partition."""

    node_kind: str = Node.Executor.SLURM

    def __init__(self, backends: Backends, starter: Starter) -> None:
        self.backends = backends  # every backend of the scheduler: a job's end cancels in its owner
        self.starter = starter
        self.mount_failures = starter.trouble.mount_failures  # which node could not mount which storage
        self._nodes: list[SlurmNode] = []
        self._nodes_read_at = float("-inf")
        self._refused: dict[str, float] = {}  # Slurm job name -> when sbatch refused it
        self._queue: dict[str, SlurmJob] = {}  # the last squeue, by name
        self._submitted: dict[str, int] = {}  # Slurm job ids submitted since, by name
        self._queue_read_at = float("-inf")
        self._early_ends: dict[str, int] = {}  # Slurm job name -> how often it ended before its tasks started
        self._awaiting: dict[int, int] = {}  # waiting job -> attempt: in Slurm, some tasks not reported
        self._roles: dict[int, list[commands.RoleRequest]] = {}  # waiting job -> its roles (its spec read once)
        self._probe_dirs: dict[tuple[int, int], str] = {}  # (waiting job, attempt) -> where its tasks report
        self.controller = Controller()
        self._sweep = True  # cancel what no attempt wants at the next squeue (a restart: always once)

    def owns(self, vc: VirtualCluster) -> bool:
        return bool(vc.slurm_partition)

    def owned_vcs(self) -> QuerySet[VirtualCluster]:
        return _slurm_vcs()

    def cancel(self, job: Job) -> None:
        """End whatever Slurm holds for the job: the running attempt's Slurm job and a pending next
        one; by their ids when this scheduler has seen them, else by name (after a restart)."""
        names = [
            commands.job_name(settings.PAI_SLURM_JOB_PREFIX, job.pk, job.job_attempt),
            commands.job_name(settings.PAI_SLURM_JOB_PREFIX, job.pk, job.job_attempt + 1),
        ]
        ids = [self._submitted.get(name) or getattr(self._queue.get(name), "slurm_id", None) for name in names]
        calls = [commands.scancel_argv([str(i) for i in ids if i])] if any(ids) else []
        calls = calls or [commands.scancel_by_name_argv(name) for name in names]
        for argv in calls:
            try:
                self.controller.run(argv)
            except (client.SlurmUnreachable, NodeSilent) as exc:
                self._sweep = True
                log.warning("cancelling %s in Slurm: no answer (%s); again once the controller answers", job, exc)
            except client.SlurmError as exc:
                log.warning("cancelling %s in Slurm failed: %s", job, exc)

    def run_pass(self) -> bool:
        """One pass over the Slurm VCs; True when it changed anything."""
        partition_of = dict(_PARTITION_OF())
        if not partition_of:
            return False
        partitions = sorted(set(partition_of.values()))
        # Slurm's queue at most every PAI_SLURM_QUEUE_SECONDS (each squeue is a slurmctld RPC);
        # launches need none: a job whose every task has reported runs.
        fresh = time.monotonic() - self._queue_read_at >= settings.PAI_SLURM_QUEUE_SECONDS
        try:
            self.refresh_nodes(partitions)
            if fresh:
                queue = self.controller.read(commands.squeue_argv(partitions))
                self._queue = parse_queue(queue, settings.PAI_SLURM_JOB_PREFIX)
                self._submitted, self._queue_read_at = {}, time.monotonic()
        except (client.SlurmError, NodeSilent) as exc:
            log.warning("Slurm does not answer: %s", exc)
            if self.controller.silent_long():
                self._nodes_read_at = float("-inf")  # (its first answer: every node as Slurm says)
                self.controller.unavailable = True
                show_unavailable(partitions, list(partition_of), self.controller.reason(exc))
            return False
        if self.controller.unavailable:
            self.controller.unavailable = False
            show_available(list(partition_of))
        if fresh and self._sweep:
            self._sweep = not self.cancel_leftovers(self._queue)
        changed = self.follow_running(self._queue) if fresh else False
        # Plain values first: most waiting jobs need only their name looked up in the queue; the job
        # itself is read for the few this pass submits, launches or explains.
        waiting = (
            Job.objects.filter(
                state=JobState.WAITING,
                virtual_cluster_id__in=partition_of,
                held=False,
            )
            .exclude(ending_cause=Job.Ending.STOP)
            .order_by("-priority", "created_at", "id")
            .values_list("pk", "job_attempt", "virtual_cluster_id", "pending_reason_messages")
        )
        seen = set()
        self._awaiting = {}
        for pk, job_attempt, vc_id, said in waiting:
            seen.add(pk)
            with job_guard(pk, self.backends, "submit it to Slurm or launch it there"):
                changed |= self._pass_waiting(pk, job_attempt + 1, partition_of[vc_id], said, fresh)
        self._roles = {pk: roles for pk, roles in self._roles.items() if pk in seen}
        self._probe_dirs = {key: path for key, path in self._probe_dirs.items() if key[0] in seen}
        return changed

    def _pass_waiting(self, pk: int, attempt: int, partition: str, said: list[dict[str, Any]], fresh: bool) -> bool:
        """One waiting job's share of a pass: submitted, launched, or its pending reason told."""
        name = commands.job_name(settings.PAI_SLURM_JOB_PREFIX, pk, attempt)
        found = self._queue.get(name)
        if name in self._submitted or (found is not None and found.active):
            if self._all_probed(pk, attempt):
                return self._launch_waiting(pk, attempt)
            if fresh and found is not None and found.pending and found.reason in FINAL_REASONS:
                self._awaiting.pop(pk, None)
                return self._refuse_held(pk, found, partition)
            self._awaiting[pk] = attempt
            if fresh and found is not None and found.pending:
                self._say_pending(pk, said, found, partition)
            return False
        if found is None:
            submitted = self.submit(_waiting_job(pk), attempt, partition)
        elif fresh and found.reason in FINAL_REASONS:  # (Slurm ended it for its request: never again)
            return self._refuse_held(pk, found, partition)
        elif fresh:  # it ended before its tasks started (cancelled, a node failed...): again
            submitted = self.resubmit(_waiting_job(pk), attempt, partition, found)
        else:
            return False
        if submitted:
            self._awaiting[pk] = attempt
            # Jobs submitted a moment ago may run already: each holds its Slurm slot until launched.
            self.launch_ready()
        return submitted

    # ---- tasks' reports --------------------------------------------------------------------
    def _requests(self, pk: int) -> list[commands.RoleRequest]:
        if pk not in self._roles:
            self._roles[pk] = [
                role.request for role in slurm_roles(Job.objects.values_list("spec", flat=True).get(pk=pk))
            ]
        return self._roles[pk]

    def _all_probed(self, pk: int, attempt: int) -> bool:
        """Every task's wrapper has reported: one directory listing, no parsing. The idle wait asks
        this every 10 ms for each job in Slurm whose tasks have not all reported, so the directory's
        path is worked out once (building it as a Path each time was most of the check's CPU, taken
        from the CPUs the jobs' steps start on)."""
        path = self._probe_dirs.get((pk, attempt))
        if path is None:
            path = self._probe_dirs[pk, attempt] = os.path.join(slurm_job_dir(pk, attempt), "probe")
        try:
            names = os.listdir(path)
        except OSError:
            return False
        return sum(name.endswith(".json") for name in names) >= sum(r.instances for r in self._requests(pk))

    @property
    def awaiting_reports(self) -> bool:
        """Some Slurm job runs whose tasks have not all said where they landed."""
        return bool(self._awaiting)

    def probes_ready(self) -> bool:
        """A job the last pass saw waiting for its tasks' reports has them all now: the scheduler's
        idle wait asks this often (a few directory listings), so a launch does not wait for the
        next pass; each Slurm slot is held until its task is launched."""
        return any(self._all_probed(pk, attempt) for pk, attempt in self._awaiting.items())

    def launch_ready(self) -> bool:
        """Launch the jobs whose tasks have all reported since the last pass (first thing in a pass)."""
        ready = [(pk, attempt) for pk, attempt in self._awaiting.items() if self._all_probed(pk, attempt)]
        launched = False
        for pk, attempt in ready:
            del self._awaiting[pk]
            with job_guard(pk, self.backends, "launch it on the nodes Slurm gave it"):
                launched |= self._launch_waiting(pk, attempt)
        return launched

    def _launch_waiting(self, pk: int, attempt: int) -> bool:
        job = Job.objects.filter(pk=pk, state=JobState.WAITING, job_attempt=attempt - 1).select_related(
            "virtual_cluster", "owner"
        )
        found = job.first()
        return found is not None and self.launch(found, attempt)

    # ---- nodes -----------------------------------------------------------------------------
    def refresh_nodes(self, partitions: list[str]) -> None:
        if time.monotonic() - self._nodes_read_at < settings.PAI_SLURM_NODES_SECONDS:
            return
        self._nodes = parse_nodes(self.controller.read(commands.sinfo_argv(partitions)))
        self._nodes_read_at = time.monotonic()
        sync_nodes(self._nodes)

    # ---- submitting ------------------------------------------------------------------------
    def resubmit(self, job: Job, attempt: int, partition: str, ended: SlurmJob) -> bool:
        """Submit again, up to EARLY_ENDS_ALLOWED times: a job whose steps cannot start at all (no
        Python or code on the nodes...) would otherwise be submitted forever."""
        ends = self._early_ends[ended.name] = self._early_ends.get(ended.name, 0) + 1
        if ends <= EARLY_ENDS_ALLOWED:
            return self.submit(job, attempt, partition)
        if ends == EARLY_ENDS_ALLOWED + 1:
            log_tail = read_tail(str(slurm_job_dir(job.pk, attempt) / "batch.log"), 300).strip()
            times = EARLY_ENDS_ALLOWED + 1
            lifecycle.set_pending_reason(
                job.pk,
                [
                    Message.of(
                        "slurm.ended_early", slurm_id=ended.slurm_id, state=ended.state, times=times, log=log_tail
                    )
                ],
            )
        return False

    def submit(self, job: Job, attempt: int, partition: str) -> bool:
        name = commands.job_name(settings.PAI_SLURM_JOB_PREFIX, job.pk, attempt)
        if time.monotonic() - self._refused.get(name, float("-inf")) < RESUBMIT_AFTER_S:
            return False
        if blocked := self._storage_blocked(job, partition):  # as on the portal's own nodes: wait, saying why
            self._refused[name] = time.monotonic()
            if stored_parts(blocked) != job.pending_reason_messages:
                lifecycle.set_pending_reason(job.pk, blocked)
            return False
        roles = [role.request for role in slurm_roles(job.normalized)]
        gpu_type = spec_gpu_type(job.normalized)
        directory = slurm_job_dir(job.pk, attempt)
        for leftover in ("probe", "launch"):  # of a Slurm job that ended before its tasks started
            for path in (directory / leftover).glob("*.json"):
                path.unlink()
        (directory / "steps").mkdir(parents=True, exist_ok=True, mode=0o700)
        script = commands.batch_script(
            roles=roles, gpu_type=gpu_type, job_dir=directory, python=sys.executable, code_dir=PROJECT_ROOT
        )
        (directory / "batch.sh").write_text(script)
        argv = commands.sbatch_argv(
            partition=partition,
            name=name,
            comment=f"PAI Portal job {job.full_name} attempt {attempt}",
            roles=roles,
            gpu_type=gpu_type,
            job_dir=directory,
            # The portal ends a job at its limit with its grace (scheduling.time_limits); Slurm's own
            # limit, after both, only when the portal could not (its SIGTERM would kill what a
            # trap started in the grace: it signals every process of the step).
            time_limit=slurm_time(job.time_limit_seconds + grace_of(job)) if job.time_limit_seconds else None,
            nice=slurm_nice(job.priority_class),
        )
        try:
            slurm_id = self.controller.run(argv).strip().split(";")[0]
        except (client.SlurmUnreachable, NodeSilent):
            return False  # (submitted or not, the next squeue says: the job's name is its key)
        except client.SlurmError as exc:
            self._refused[name] = time.monotonic()
            reason = refusal_reason(str(exc), job_ask(roles), PartitionUse.of(partition, self._nodes))
            if is_final_refusal(str(exc)):  # it would refuse it again each time: the job ends
                lifecycle.refuse(job, ExitCode.CREATE_FRAMEWORK_PERMANENT_FAILED, reason)
                return False  # (nothing submitted: no Slurm job to wait for)
            if stored_parts([reason]) != job.pending_reason_messages:
                lifecycle.set_pending_reason(job.pk, [reason])
            return False
        self._refused.pop(name, None)
        self._submitted[name] = int(slurm_id)
        lifecycle.event(
            job.pk,
            "slurm-submitted",
            Message.of("slurm.submitted", slurm_id=slurm_id, partition=partition),
        )
        lifecycle.set_pending_reason(job.pk, [Message.of("slurm.submitted", slurm_id=slurm_id, partition=partition)])
        return True

    def _storage_blocked(self, job: Job, partition: str) -> Reason | None:
        """Why no node of the partition can mount a storage the job needs (scheduling.storage_gate)."""
        nodes = list(Node.objects.filter(executor=Node.Executor.SLURM, slurm_partition=partition))
        return storage_gate([(job.pk, job.normalized)], nodes, self.mount_failures).blocked.get(job.pk)

    def _refuse_held(self, pk: int, found: SlurmJob, partition: str) -> bool:
        """Slurm holds (or ended) the job with a reason it gives only for a request it can never
        run as configured: the job ends FAILED with Slurm's words, and its Slurm job is cancelled."""
        reason = final_reason(found, job_ask(self._requests(pk)), PartitionUse.of(partition, self._nodes))
        if found.active:
            try:
                self.controller.run(commands.scancel_argv([str(found.slurm_id)]))
            except (client.SlurmUnreachable, NodeSilent):
                self._sweep = True  # (the sweep cancels it: no attempt of a failed job wants it)
            except client.SlurmError as exc:
                log.warning("cancelling Slurm job %s: %s", found.slurm_id, exc)
        return lifecycle.refuse(_waiting_job(pk), ExitCode.CREATE_FRAMEWORK_PERMANENT_FAILED, reason)

    def _say_pending(self, pk: int, said: list[dict[str, Any]], found: SlurmJob, partition: str) -> None:
        """Its reason, and Slurm's StartTime as its expected start (written with the reason, which
        names that time: a changed start changes the reason)."""
        now = timezone.now()
        reason = [pending_reason(found, job_ask(self._requests(pk)), PartitionUse.of(partition, self._nodes), now)]
        if stored_parts(reason) != said:
            lifecycle.set_pending_reason(pk, reason)
            Job.objects.filter(pk=pk, state=JobState.WAITING).update(expected_start_at=expected_start(found, now))

    # ---- launching -------------------------------------------------------------------------
    def launch(self, job: Job, attempt: int) -> bool:
        """Claim the job on the nodes Slurm gave it once every task's wrapper has said where it is."""
        roles = slurm_roles(job.normalized)
        probes = {}
        for path in (slurm_job_dir(job.pk, attempt) / "probe").glob("*.json"):
            probes[path.stem] = json.loads(path.read_text())
        if len(probes) < sum(role.request.instances for role in roles):
            return False
        node_by_name = {node.name: node for node in Node.objects.filter(name__in={p["node"] for p in probes.values()})}
        if len(node_by_name) < len({p["node"] for p in probes.values()}):
            self._nodes_read_at = float("-inf")  # a node new to the portal: read sinfo next pass
            return False
        placements = []
        for role in roles:
            for index in range(role.request.instances):
                probe = probes[f"{role.request.role}-{index}"]
                ports, free = {}, list(probe["ports"])
                for label, count in role.port_labels:
                    ports[label], free = free[:count], free[count:]
                placements.append(
                    Placement(role.request.role, index, node_by_name[probe["node"]].pk, list(probe["gpus"]), ports)
                )
        tasks = lifecycle.claim_for_launch(job, placements, where=", ".join(sorted(node_by_name)))
        if tasks is None:
            return False
        by_id = {node.pk: node for node in node_by_name.values()}
        for task in tasks:
            task.node = by_id[task.node_id] if task.node_id is not None else None
            task.ip = task.node.address if task.node else ""
        lifecycle.set_task_launches(tasks)  # the addresses first: a reconcile after a crash builds the same env
        self.starter.start_tasks(job, tasks, everyone=tasks)
        return True

    # ---- cancels the controller did not take ---------------------------------------------
    def cancel_leftovers(self, queue: dict[str, SlurmJob]) -> bool:
        """Cancel each active Slurm job whose attempt its portal job no longer wants (see the
        module); True when there was none or Slurm took the cancel."""
        active = {}
        for name, found in queue.items():
            parsed = commands.job_of(name, settings.PAI_SLURM_JOB_PREFIX)
            if found.active and parsed is not None:
                active[parsed] = found.slurm_id
        rows = Job.objects.filter(pk__in={job_id for job_id, _ in active}).values_list("pk", "state", "job_attempt")
        wanted = {pk: (state, job_attempt) for pk, state, job_attempt in rows}
        leftovers = sorted(
            str(slurm_id)
            for (job_id, attempt), slurm_id in active.items()
            if job_id in wanted and not _wants(*wanted[job_id], attempt)
        )
        if not leftovers:
            return True
        try:
            self.controller.run(commands.scancel_argv(leftovers))
        except (client.SlurmUnreachable, NodeSilent) as exc:
            log.warning("cancelling Slurm jobs %s no attempt wants: no answer (%s)", ", ".join(leftovers), exc)
            return False
        except client.SlurmError as exc:  # (one had ended meanwhile: the others are cancelled)
            log.warning("cancelling Slurm jobs %s no attempt wants: %s", ", ".join(leftovers), exc)
        log.info("cancelled Slurm jobs %s: no attempt of their portal jobs wants them", ", ".join(leftovers))
        return True

    # ---- following -------------------------------------------------------------------------
    def follow_running(self, queue: dict[str, SlurmJob]) -> bool:
        """Tasks whose Slurm job ended without their exit recorded end as Slurm says."""
        running = Task.objects.filter(
            state=TaskState.RUNNING,
            job__state=JobState.RUNNING,
            job__ending_deadline__isnull=True,  # (in its grace: the time limit that began it ends it)
            node__executor=self.node_kind,
        ).select_related("node", "job")
        by_job: dict[int, list[Task]] = defaultdict(list)
        for task in running:
            by_job[task.job_id].append(task)
        changed = False
        for tasks in by_job.values():
            job = tasks[0].job
            found = queue.get(commands.job_name(settings.PAI_SLURM_JOB_PREFIX, job.pk, job.job_attempt))
            if found is not None and found.active:
                continue
            with job_guard(job.pk, self.backends, "record how its Slurm job ended"):
                for task in tasks:
                    assert task.node is not None
                    # Read after squeue: an exit recorded before the Slurm job ended is seen here.
                    status = executors.node_executor(task.node).poll(TaskHandle(task.executor_id, task.ip))
                    if status.running:
                        status = status_after(found.state if found else None)
                    task.job = job
                    # Its allocation is gone: a retry is the job's, in a new Slurm job.
                    ending.record_exit(task, status, retry_in_place=False)
                ending.apply_completion_policy(job, self.backends)
            changed = True
        return changed


def _wants(state: str, job_attempt: int, attempt: int) -> bool:
    """Whether a portal job in this state still wants the Slurm job of this attempt: a running
    job its current one, a waiting job its next one; a stopping job is being cancelled by its
    stop, and a succeeded job's steps end by themselves. A stopped or failed job wants none."""
    if state == JobState.RUNNING:
        return attempt == job_attempt
    if state == JobState.WAITING:
        return attempt == job_attempt + 1
    return state in (JobState.STOPPING, JobState.SUCCEEDED)
