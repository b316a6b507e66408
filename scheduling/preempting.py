"""Preemption inside a virtual cluster, and reclaim of a VC's quota lent to another's jobs:
placement's waiting jobs that a lower class's running jobs, or the borrowers of their VC's quota,
keep out (clusters.preemption decides which, pure), and the preempted jobs' ends. Both take the one
graceful-end path (scheduling.terminating) with the cause `preemption` or `reclaim`.

`decide` runs in the placing phase, right after placement: for each chosen victim the end begins
(its ending record stored, its preemptor named), then its tasks get SIGTERM. The victim stays
RUNNING, holding its room, through its grace period; the waiting job says whom it preempts.
`carry_out` runs early in each pass: a preempted job whose tasks have all ended, or whose deadline
has passed, has everything removed and goes back to WAITING free of charge
(lifecycle.requeue_preempted: its attempt ends with the exit spec's -1003), which frees the room
the placing phase then gives the preemptor: `holders` names the jobs whose victims are ending or
ended, which placement takes before all others (JobRequest.holds), so no other VC's job earlier
in its order takes that room first. The room an ended victim freed is stored with its requeue
(scheduling.models.HeldRoom) and kept from every other job while its preemptor waits for its other
victims (JobRequest.held): a victim that ends early does not give its room away. `release` lets
it go once the preemptor is placed, or has had a pass with no victim left ending. A restart in
between keeps every deadline and held room (stored) and starts nothing twice (a preempted job's
unstarted tasks never start; its ended ones are ended here only, not by the ending phase).
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from django.db.models import Q
from django.db.models.functions import Coalesce
from django.utils import timezone

from catalogue import Message
from catalogue.reasons import Reason, stored_reason
from clusters.placement import HeldRoom, JobRequest, NodeState, PlacementResult, VcState
from clusters.preemption import Holding, Preemption, RunningJob, plan_preemptions
from jobs import lifecycle
from jobs.models import Job, JobState, Task, TaskState
from queries.prepared import ListOf, Prepared
from scheduling import quota
from scheduling.backends import Backends
from scheduling.guard import job_guard
from scheduling.models import HeldRoom as HeldRoomRow
from scheduling.terminating import Terminator

# How lifecycle.requeue_preempted's waiting reason begins.
PREEMPTED = frozenset({"reason.preempted_by", "reason.preempted_by_higher"})


# The waiting jobs whose victims are ending, and the room ended victims freed (read at every
# placement: their SQL compiled once).
_ENDING_BY: Prepared[int] = Prepared(
    lambda: Job.objects.filter(state=JobState.RUNNING, ending_by__isnull=False).values_list("ending_by_id", flat=True)
)
_HELD_ROOM: Prepared[tuple[int, str, list[int], int, int]] = Prepared(
    lambda: HeldRoomRow.objects.values_list("job_id", "node__name", "gpus", "cpu", "memory_mb")
)
# The running jobs being preempted (read every pass: its SQL compiled once).
_PREEMPTED: Prepared[Job] = Prepared(
    lambda: Job.objects.filter(state=JobState.RUNNING, ending_cause__in=lifecycle.PREEMPTIONS)
)
_MAY_MAKE_ROOM: Prepared[tuple[Any, ...]] = Prepared(
    lambda top_priority, vcs: Job.objects.filter(
        Q(priority__lt=top_priority)
        | Q(ending_deadline__isnull=False)
        | Q(state=JobState.STOPPING)
        | Q(borrowed_from__name__in=vcs),
        Q(borrowed_from__isnull=True, virtual_cluster__name__in=vcs) | Q(borrowed_from__name__in=vcs),
        state__in=[JobState.RUNNING, JobState.STOPPING],
    ).values_list(
        "pk",
        "priority",
        "launched_at",
        "created_at",
        "ending_deadline",
        "state",
        "borrowed_from_id",
        Coalesce("borrowed_from__name", "virtual_cluster__name"),  # (a Prepared read's annotations last)
    ),
    int,
    ListOf(str),
)
_HOLDINGS: Prepared[tuple[int, str, int, str, list[int], dict[str, list[int]]]] = Prepared(
    lambda job_ids: Task.objects.filter(job_id__in=job_ids, state=TaskState.RUNNING, node__isnull=False).values_list(
        "job_id", "role", "node_id", "node__name", "gpus", "ports"
    ),
    ListOf(int),
)


def with_preempted_note(said: list[dict[str, Any]], reason: Reason) -> Reason:
    """A preempted job's waiting reason keeps saying who preempted it, before why it waits now
    (`said`: its reason as stored). Looked at in the stored dict first: every waiting job's reason
    passes here each placement, and few of them were preempted."""
    first = said[0] if isinstance(said, list) and said else None
    if not isinstance(first, dict) or first.get("code") not in PREEMPTED:
        return reason
    note = stored_reason([first])
    return reason if reason[:1] == note else [*note, *reason]


class Preempter:
    def __init__(self, terminator: Terminator, specs: quota.SpecCache, backends: Backends) -> None:
        self.terminator = terminator
        self.specs = specs
        self.backends = backends

    def holders(self) -> dict[int, tuple[HeldRoom, ...]]:
        """The waiting jobs the room of a preemption is held for: those whose victims are ending
        (in their grace) or have ended (the room they freed, by job)."""
        held: dict[int, tuple[HeldRoom, ...]] = {key: () for key in _ENDING_BY()}
        for job_id, node, gpus, cpu, memory_mb in _HELD_ROOM():
            held[job_id] = (*held.get(job_id, ()), HeldRoom(node, tuple(gpus), cpu, memory_mb))
        return held

    def release(self, holders: set[int], placed: set[int]) -> None:
        """Held room goes back to every job once its holder is placed, has left the queue, or has
        had this pass with no victim still ending (and none begun by `decide`): nothing more comes."""
        ending = set(
            Job.objects.filter(
                state=JobState.RUNNING, ending_by_id__in=holders - placed, ending_deadline__isnull=False
            ).values_list("ending_by_id", flat=True)
        )
        waiting = set(Job.objects.filter(pk__in=ending, state=JobState.WAITING).values_list("pk", flat=True))
        HeldRoomRow.objects.exclude(job_id__in=waiting).delete()

    def decide(
        self,
        nodes: list[NodeState],
        vcs: dict[str, VcState],
        requests: list[JobRequest],
        result: PlacementResult,
        gpus: dict[int, dict[int, str]] | None = None,
    ) -> dict[int, Reason]:
        """Begin the preemptions placement's result calls for; the waiting reason of each job that
        preempts (or waits for jobs preempted already), by job id. `gpus`: quota.node_gpus(), when
        the pass read it already."""
        waiting = [job for job in requests if job.key in result.pending and job.key not in result.never_fits]
        if not waiting:
            return {}
        top: dict[str, int] = {}  # VC -> its highest waiting class
        for job in waiting:
            top[job.vc] = max(top.get(job.vc, job.priority), job.priority)
        running = self._running_jobs(top, gpus)
        if not running:
            return {}
        # Every request: what this pass placed in any VC holds its room (a VC with no job left
        # waiting has none to plan for, so it is passed over there).
        plans = plan_preemptions(nodes, vcs, requests, running, result)
        return {key: self._begin(plan) for key, plan in plans.items()}

    def _begin(self, plan: Preemption) -> Reason:
        by = Job.objects.select_related("owner", "virtual_cluster").get(pk=plan.job)
        now = timezone.now()
        victims = Job.objects.select_related("owner").in_bulk(list(plan.victims) + list(plan.awaiting))
        for victim_id in plan.victims:
            victim = victims[victim_id]
            with job_guard(victim_id, self.backends, "preempt it"):
                cause = Job.Ending.RECLAIM if victim.borrowed_from_id is not None else Job.Ending.PREEMPTION
                self.terminator.begin(victim, cause, list(victim.tasks.select_related("node")), now, by=by)
        ending = [victims[key] for key in plan.victims + plan.awaiting if key in victims]
        names = [job.full_name for job in ending]
        if ending and all(job.borrowed_from_id is not None for job in ending):
            return [Message.of("reason.reclaiming", vc=plan.vc, jobs=names)]
        return [Message.of("reason.preempting", jobs=names, vc=plan.vc)]

    def _running_jobs(self, top: dict[str, int], gpus: dict[int, dict[int, str]] | None = None) -> list[RunningJob]:
        """The running jobs holding these VCs' quota that could make room: those below the VC's
        highest waiting class, those on its quota borrowed (reclaimed for any of its jobs), and those
        being ended already (preempted, or stopping: their room is coming free)."""
        rows = [
            (pk, vc, priority, launched, created, deadline, state, lender)
            for pk, priority, launched, created, deadline, state, lender, vc in _MAY_MAKE_ROOM(
                max(top.values()), list(top)
            )
            if priority < top[vc] or deadline is not None or state == JobState.STOPPING or lender is not None
        ]
        if not rows:
            return []
        specs = self.specs.get_many(row[0] for row in rows)
        gpu_types = quota.node_gpus() if gpus is None else gpus
        holdings: dict[int, list[Holding]] = defaultdict(list)
        for job_id, role, node_id, node_name, indexes, ports in _HOLDINGS([row[0] for row in rows]):
            res = quota.task_resources(specs[job_id], role)
            types = gpu_types.get(node_id, {})
            holdings[job_id].append(
                Holding(
                    node=node_name,
                    gpus={int(index): types.get(int(index), "") for index in indexes},
                    cpu=res.cpu,
                    memory_mb=res.memory_mb,
                    ports=frozenset(port for numbers in ports.values() for port in numbers),
                )
            )
        return [
            RunningJob(
                key=pk,
                vc=vc,
                priority=priority,
                started=(launched or created).timestamp(),
                holdings=holdings[pk],
                terminating=deadline is not None or state == JobState.STOPPING,
                borrowed=lender is not None,
            )
            for pk, vc, priority, launched, created, deadline, state, lender in rows
        ]

    def carry_out(self) -> bool:
        """Preempted jobs whose tasks have all ended, or whose grace is over: their tasks removed,
        the jobs back in the queue. True when any went back (their room is free)."""
        jobs = _PREEMPTED()
        now = timezone.now()
        changed = False
        for job in jobs:
            with job_guard(job.pk, self.backends, "end its preempted attempt"):
                changed |= self.terminator.end(job, job.ending_cause, self.backends, now, requeued=self._hold_room)
        return changed

    def _hold_room(self, job: Job, tasks: list[Task]) -> None:
        HeldRoomRow.objects.bulk_create(self._rooms_of(job, tasks))

    def _rooms_of(self, job: Job, tasks: list[Task]) -> list[HeldRoomRow]:
        """The room a preempted job's tasks hold, to keep for the job that preempted it."""
        if job.ending_by_id is None:
            return []
        spec = self.specs.get_many([job.pk])[job.pk]
        rooms = []
        for task in tasks:
            if task.node_id is None:
                continue
            res = quota.task_resources(spec, task.role)
            rooms.append(
                HeldRoomRow(
                    job_id=job.ending_by_id,
                    node_id=task.node_id,
                    gpus=[int(index) for index in task.gpus or []],
                    cpu=res.cpu,
                    memory_mb=res.memory_mb,
                )
            )
        return rooms
