"""Placing waiting jobs on the portal's own nodes (the VCs no backend owns): the queue, as plain
values, against the cluster's state (scheduling.quota), through clusters.placement; each placed job
claimed (lifecycle.claim_for_launch) and its tasks started (scheduling.starting) within a budget,
the rest launched by the next passes."""

from __future__ import annotations

import time
from collections import deque
from datetime import datetime
from typing import Any, NamedTuple

from django.db.models import Count, Max, QuerySet

from catalogue import Message
from catalogue.reasons import Reason, StoredParts, stored_reason
from clusters.models import Node, VirtualCluster
from clusters.placement import HeldRoom, JobRequest, TaskPlacement, TaskRequest, place
from jobs import lifecycle
from jobs.lifecycle import Placement
from jobs.models import Job, JobState
from jobs.protocol.honoured import infiniband_roles
from jobs.protocol.spec import NormalizedSpec
from queries.prepared import ListOf, Prepared
from scheduling import executors, quota, sharing
from scheduling.backends import Backends
from scheduling.guard import job_guard
from scheduling.preempting import Preempter, with_preempted_note
from scheduling.starting import Starter
from scheduling.storage_gate import storage_gate
from scheduling.terminating import Terminator

WAITING_BATCH = 2000
WAITING_COLUMNS = (
    "pk",
    "virtual_cluster__name",
    "priority",
    "created_at",
    "pending_reason_messages",
    "owner__username",
    "time_limit_seconds",
    "priority_class",
    "name",
)
# A pass stops launching after this long and leaves the rest to the next pass (placement runs
# again at once), so stop requests and exits are never stuck behind a thousand launches.
LAUNCH_BUDGET_S = 0.5
# Jobs launched together: read in one query, claimed one by one, their tasks started side by side.
LAUNCH_BATCH = 16
# The nodes, read at every placement (its SQL compiled once).
_NODES: Prepared[Node] = Prepared(lambda: Node.objects.all())
_JOBS_TO_LAUNCH: Prepared[Job] = Prepared(
    lambda job_ids: Job.objects.select_related("virtual_cluster", "owner").filter(pk__in=job_ids), ListOf(int)
)


class WaitingJob(NamedTuple):
    """A queued job as placement needs it (the spec comes from the placer's SpecCache)."""

    pk: int
    vc: str
    priority: int
    created_at: datetime
    said: list[dict[str, Any]]  # its pending reason as stored (pending_reason_messages)
    owner: str
    time_limit_seconds: int | None
    priority_class: str
    name: str


class Placer:
    def __init__(self, starter: Starter, backends: Backends, terminator: Terminator | None = None) -> None:
        self.starter = starter
        self.backends = backends
        self._last_queue_signature: tuple[int, Any] | None = None
        self._specs = quota.SpecCache()
        self.preempter = Preempter(terminator or Terminator(), self._specs, backends)
        self._usage = sharing.RecentUsage(self._specs)
        self._task_requests: dict[int, list[TaskRequest]] = {}
        # Jobs placed by the last placement but not launched within its pass's budget: launched
        # by the next passes before placement runs again (resources only grew meanwhile).
        self._unlaunched: deque[tuple[int, list[TaskPlacement]]] = deque()
        self._unlaunched_nodes: dict[str, Node] = {}
        self._borrowed: dict[int, str] = {}  # placed jobs that run on a lending VC's idle quota -> that VC
        self._backfilled: dict[int, Message] = {}  # placed jobs backfill started ahead -> why (their event)
        self._expected = sharing.ExpectedStarts()
        self._run_times = sharing.RunTimes()

    def schedule_waiting(self, *, resources_freed: bool = True) -> bool:
        """Place waiting jobs. Skipped when nothing changed since the last placement: no job was
        submitted or requeued and no resources were freed (placement would answer the same)."""
        if self._unlaunched:
            self._launch_within_budget()
            return True
        signature = self._queue_signature()
        if not resources_freed and signature == self._last_queue_signature:
            return False
        # The queue as plain values: a model per waiting job each pass is most of a pass's cost.
        waiting = self.backends.prepared(_waiting_rows)()
        if not waiting:
            self._last_queue_signature = signature
            return False
        rows = [WaitingJob(*row) for row in waiting]
        specs = self._specs.get_many(row.pk for row in rows)
        nodes = _NODES()
        gpus = quota.node_gpus()  # (read once: the usage, the plan and the preemptions all need it)
        usage = quota.cluster_usage(nodes, self._specs, gpus)
        node_states, vc_states = usage.nodes, usage.vcs
        now = time.monotonic()
        trouble = self.starter.trouble
        silent = {node.name for node in nodes if executors.silent(node)}  # (not down yet: no new work either)
        for state in node_states:  # ports another program held lately: other ports this time
            state.ports_used.update(trouble.port_conflicts.on(state.name, now))
            state.ports_just_freed = frozenset(trouble.just_freed.on(state.name, now))
            if state.name in silent and state.schedulable:  # (silent for now: it may answer again)
                state.schedulable, state.down = False, True
        gate = storage_gate(((row.pk, specs[row.pk]) for row in rows), nodes, trouble.mount_failures)
        without_infiniband = frozenset(node.name for node in nodes if not node.infiniband)
        for row in rows:  # a job asking InfiniBand runs only where a node declares it
            if without_infiniband and infiniband_roles(specs[row.pk]):
                gate.avoid[row.pk] = gate.avoid.get(row.pk, frozenset()) | without_infiniband
        recent = self._usage.of(vc_states)
        holders = self.preempter.holders()
        requests = [
            self._job_request(row, specs[row.pk], gate.avoid, recent, holders)
            for row in rows
            if row.pk not in gate.blocked
        ]
        # (the plan of the running jobs' ends: backfill's reservations and every waiting job's expected start)
        plan = sharing.backfill_plan(self._specs, started := time.time(), self._run_times, gpus)
        result = place(node_states, vc_states, requests, plan)
        # Waiting jobs a lower class keeps out: their preemptions begin (and say so as their reason).
        preempting = self.preempter.decide(node_states, vc_states, requests, result, gpus)
        result.pending.update(preempting)
        # (a job whose preemptions began is expected when its victims are expected to have ended, not by the plan)
        result.expected.update(sharing.preemption_starts(set(preempting), self._run_times, started))
        if holders:
            self.preempter.release(set(holders), set(result.placed))
        sharing.record_queues(result, vc_states)
        self._expected.record(result.expected)
        with_storage_notes(result.pending, gate.notes)
        result.pending.update(gate.blocked)
        self._unlaunched = deque(result.placed.items())
        self._borrowed = result.borrowed
        self._backfilled = sharing.backfill_notes(result)
        self._unlaunched_nodes = {node.name: node for node in nodes}
        left = self._launch_within_budget()
        kinds = self.backends.node_kinds()
        down = [
            Message.of("reason.node_down", node=n.name, why=stored_reason(n.down_reason_messages) or n.down_reason)
            for n in nodes
            if n.down_since is not None and n.executor not in kinds
        ]
        said = {row.pk: row.said for row in rows}
        reasons = {job: with_preempted_note(said[job], reason + down) for job, reason in result.pending.items()}
        stored = StoredParts()
        lifecycle.set_pending_reasons(
            {job_id: reason for job_id, reason in reasons.items() if said[job_id] != stored.parts(reason)}, stored
        )
        # The queue as it was before this placement read it: a job that joined it meanwhile (a
        # submit, a retry) was not looked at, and the next pass must place it. (Read again now,
        # after the launches, that job would be in it, and skipped by every pass until something
        # else changed.) A start that fails records nothing here: the next ending phase requeues
        # or retries its job, and that pass frees resources (placement looks again then).
        self._last_queue_signature = signature
        if left and not self._unlaunched and len(rows) < WAITING_BATCH:
            self._last_queue_signature = self._launched_from(signature, left)
        return bool(result.placed)

    def _launched_from(self, before: tuple[int, Any], left: int) -> tuple[int, Any]:
        """The queue's signature now, when it is `before` less the `left` jobs this placement
        launched and nothing joined it (then the next pass need not place the rest again: it
        would answer the same, while nothing is freed); else `before` (the next pass looks again).
        With two slots and a long queue every launch made the next pass place the whole queue
        again to start nothing: 145 of 345 placements for 200 trivial jobs."""
        now = self._queue_signature()
        (count, newest), (count_before, newest_before) = now, before
        unchanged = newest is None or (newest_before is not None and newest <= newest_before)
        return now if count == count_before - left and unchanged else before

    def _queue_signature(self) -> tuple[int, Any]:
        """(how many wait, the newest change among them), in one query."""
        found: list[tuple[int, Any]] = self.backends.prepared(_signature)()
        return found[0] if found else (0, None)

    def _launch_within_budget(self) -> int:
        """Launch placed jobs until LAUNCH_BUDGET_S is spent; the rest wait for the next pass. How
        many were claimed (they left the queue)."""
        deadline = time.monotonic() + LAUNCH_BUDGET_S
        claimed = 0
        while self._unlaunched and time.monotonic() <= deadline:
            # The jobs read a few at a time (one query each few), fresh enough for their claims.
            chunk = [self._unlaunched.popleft() for _ in range(min(LAUNCH_BATCH, len(self._unlaunched)))]
            jobs = {job.pk: job for job in _JOBS_TO_LAUNCH([job_id for job_id, _ in chunk])}
            batch = [(jobs[job_id], placements) for job_id, placements in chunk if job_id in jobs]  # (deleted?)
            claimed += self.launch_jobs(batch, self._unlaunched_nodes)
        return claimed

    def _job_request(
        self,
        job: WaitingJob,
        spec: NormalizedSpec,
        avoid: dict[int, frozenset[str]],
        recent: dict[tuple[str, str], float],
        holders: dict[int, tuple[HeldRoom, ...]],
    ) -> JobRequest:
        """Placement's view of a waiting job; its tasks built once per job (a spec never changes)."""
        tasks = self._task_requests.get(job.pk)
        if tasks is None:
            if len(self._task_requests) > quota.SpecCache.LIMIT:
                self._task_requests.clear()
            tasks = self._task_requests[job.pk] = quota.task_requests(spec)
        return quota.job_request(
            job.pk,
            job.vc,
            spec,
            tasks,
            priority=job.priority,
            order=job.created_at.timestamp(),
            avoid=avoid.get(job.pk, frozenset()),
            user=job.owner,
            name=f"{job.owner}~{job.name}",
            usage=recent.get((job.vc, job.owner), 0.0),
            may_borrow=quota.may_borrow(job.priority_class),
            holds=job.pk in holders,
            limit_s=job.time_limit_seconds,
            expected_s=self._run_times.expected_s(job.vc, job.owner, job.time_limit_seconds),
            grace_s=sharing.job_grace(spec),
            held=holders.get(job.pk, ()),
        )

    def launch_jobs(self, batch: list[tuple[Job, list[TaskPlacement]]], node_by_name: dict[str, Node]) -> int:
        """Claim each job of the batch, then start all their tasks side by side (a start waits on
        its node's engine or on a process being made, not on this loop). How many were claimed."""
        by_id = {node.pk: node for node in node_by_name.values()}
        borrowed = set(self._borrowed.values())
        lenders = {vc.name: vc for vc in VirtualCluster.objects.filter(name__in=borrowed)} if borrowed else {}
        claimed = []
        for job, placements in batch:
            with job_guard(job.pk, self.backends, "claim the nodes placement gave it"):
                tasks = lifecycle.claim_for_launch(
                    job,
                    [Placement(p.role, p.index, node_by_name[p.node].pk, p.gpus, p.ports) for p in placements],
                    where=", ".join(sorted({p.node for p in placements})),
                    borrowed_from=lenders.get(self._borrowed.get(job.pk, "")),
                    note=self._backfilled.get(job.pk),
                )
                if tasks is None:
                    continue  # another scheduler, or a stop, got there first
                for task in tasks:
                    task.node = by_id[task.node_id] if task.node_id is not None else None
                claimed.append((job, tasks))
        self.starter.start_claimed(claimed)
        return len(claimed)


def with_storage_notes(pending: dict[int, Reason], notes: dict[int, list[Message]]) -> None:
    """Each waiting job that avoids nodes which cannot mount its storage says which and why (said
    of its reason's last part, in parentheses)."""
    for job_id, note in notes.items():
        if reason := pending.get(job_id):
            pending[job_id] = [*reason[:-1], Message.of("reason.storage.avoiding", why=reason[-1], nodes=note)]


def _queue(owned: QuerySet[VirtualCluster] | None) -> QuerySet[Job]:
    """The portal's queue: the waiting jobs, not held, not asked to stop, of the VCs no backend owns."""
    queue = Job.objects.filter(state=JobState.WAITING, held=False).exclude(ending_cause=Job.Ending.STOP)
    return queue if owned is None else queue.exclude(virtual_cluster__in=owned)


def _waiting_rows(owned: QuerySet[VirtualCluster] | None) -> QuerySet[Job, tuple[Any, ...]]:
    """The queue in its order, as plain values (read at each placement: Backends.prepared)."""
    return _queue(owned).order_by("-priority", "created_at", "id").values_list(*WAITING_COLUMNS)[:WAITING_BATCH]


def _signature(owned: QuerySet[VirtualCluster] | None) -> QuerySet[Job, tuple[int, Any]]:
    """(how many wait, the newest change among them) in one row, none when nobody waits (grouped by
    `held`, False throughout, so that it is a values_list a Prepared read can run: every pass reads it)."""
    return (
        _queue(owned)
        .order_by()
        .values("held")
        .annotate(count=Count("pk"), newest=Max("updated_at"))
        .values_list("count", "newest")
    )
