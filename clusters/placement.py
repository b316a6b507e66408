"""Gang placement: a pure function from (free resources, VC quotas, pending jobs) to placements.

No database, no Docker: the scheduler loop builds these inputs from the DB and records the
outputs. CONTRACT (the scheduler loop relies on these names; extend, don't rename).

Rules (docs/user/why.md):
- gang: all tasks of a job are placed, or none;
- a job that preempted others for room (`JobRequest.holds`: their room is coming or just came
  free) goes first of all, so the room its victims free is its own, not another VC's job's that
  is earlier in the order below (it would then wait for a job to end: issue 30); the room its
  victims freed already (`JobRequest.held`: one ended before the others) no other job is given
  while it still waits for the rest;
- then jobs go by priority (higher first), then, in a fair-share VC, their owner's recent usage
  (least first), then `order` (earlier first); each VC is a strict queue: once a VC's first job
  cannot be placed, the VC's later jobs wait behind it (no backfill, so the head is never
  delayed), except that borrowing is judged per job (below). A job that can never fit the cluster
  as it is (over its VC's whole quota, bigger than any node) does not block its VC; a waiting job
  never holds back jobs of another VC;
- a VC's per-user GPU cap holds a job whose owner's jobs would hold more than the cap; it does
  not block the VC (other users' jobs go on);
- borrowing (docs/admin/sharing.md, "Borrowing and reclaim"): a job that may borrow (`JobRequest.may_borrow`)
  and that its own VC's quota refuses runs on the idle quota of a lending VC
  (`VcState.lends`) that has no waiting job of its own this pass and room for the whole job
  (the one with the most idle room), within the lender's lending limit (`VcState.lending_limit`: the
  rest of its quota it keeps for its own jobs) and the borrower's VC's borrowing limit
  (`VcState.borrowing_limit`: the most its jobs hold beyond its quota); it then counts against that VC's quota
  (`PlacementResult.borrowed`), which takes it back by preemption (clusters.preemption). It is
  offered that room even behind its own VC's first waiting job when that job waits on its own
  VC's quota and may not borrow (it could never use the lender's room); never its own VC's quota
  then, which is the waiting job's;
- a job goes on one node when one can hold it (the node with the fewest free GPUs that do, so
  big holes stay for big jobs), else it is spread biggest task first, each task onto a node
  the job already uses, else onto the node with the most free GPUs; the nodes of a spread job
  must reach each other, so a loopback-address node only ever shares a job with other such nodes;
- each task gets concrete GPU indices of one type (the job's gpu_type when set) and host
  ports: a v1 beginAt asks for exactly begin_at..begin_at+count-1, else the lowest free
  ports of the node's port range; no port is ever given twice, also not within one pass.
Every job left waiting gets a reason with numbers: a list of Messages (clusters.texts), its parts.
"""

from __future__ import annotations

import bisect
import heapq
import itertools
import math
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from decimal import Decimal
from typing import NamedTuple

from catalogue import Message
from clusters.texts import counted_gpus, memory_text

MAX_PORT = 65535
ANY_TYPE = "*"  # index key: a node's free GPUs of its most available type
UNKNOWN_TOTAL = 2**62  # a node total nobody told us: never the reason a job "can never fit"
# Expected starts are worked out for this many jobs at the head of each VC's queue; later ones are
# unknown (Slurm's backfill also looks only so deep: bf_max_job_test). Keeps a pass's cost bounded.
ESTIMATED_DEPTH = 100
# The start plan works a kept reservation out again (where it may have moved sooner, or where a later
# job could start but for it) at most this many times a plan; past that it keeps it where it was (the
# pass's cost bounded, as bf_max_job_test bounds Slurm's).
REWORKED_RESERVATIONS = 10


@dataclass(frozen=True)
class Resources:
    gpu: int = 0
    cpu: int = 0
    memory_mb: int = 0


@dataclass
class NodeState:
    name: str
    cpu_free: int
    memory_free_mb: int
    gpus_free: dict[int, str]  # free GPU index -> GPU type name
    ports_used: set[int] = field(default_factory=set)
    # Free, but freed a moment ago (a task's exit): the ended task's network may still hold them
    # (a process task's pasta, ~20 ms). Given out only when no other port is free.
    ports_just_freed: frozenset[int] = frozenset()
    port_range: tuple[int, int] = (20000, 40000)  # inclusive
    schedulable: bool = True
    gpu_total: int = 0  # all GPUs on the node, free or not (for reasons with numbers)
    # all CPUs / memory on the node, busy or not; 0 = unknown: then no job is ever judged too big for it
    cpu_total: int = 0
    memory_total_mb: int = 0
    # Its address is a loopback one (this machine, as other nodes cannot reach it): a job spans it
    # only together with other loopback nodes, never with nodes elsewhere.
    loopback: bool = False
    # Not schedulable only because it is down (or silent) for now: what it holds may come back, so
    # no job is judged "can never fit" for want of it; a job that needs it waits for it.
    down: bool = False


@dataclass
class VcState:
    name: str
    limit: Resources  # the VC's share of the cluster, in absolute numbers
    used: Resources  # what its running jobs hold now
    fair_share: bool = False  # its queue goes by its users' recent usage (JobRequest.usage), not FIFO
    user_gpu_limit: int | None = None  # most GPUs one user's jobs may hold in it at once
    gpus_by_user: dict[str, int] = field(default_factory=dict)  # what each user's running jobs hold
    lends: bool = False  # other VCs' borrowing jobs may run on its idle quota
    # its quota were the nodes that are down now back (None: the same as limit)
    limit_with_down: Resources | None = None
    best_effort: bool = False  # a waiting first job holds nobody back (Kueue's BestEffortFIFO)
    backfill: bool = False  # later jobs may start ahead of a blocked first job without delaying it
    # Kueue's lendingLimit/borrowingLimit (None: none): the most of its quota other VCs' jobs may hold
    # at once (it keeps the rest for its own), and the most its jobs may hold on lenders' quotas at once.
    lending_limit: Resources | None = None
    borrowing_limit: Resources | None = None
    lent: Resources = Resources()  # what other VCs' jobs hold of its quota now (counted in `used` too)
    borrowed: Resources = Resources()  # what its jobs hold of lenders' quotas now


@dataclass(frozen=True)
class PortRequest:
    label: str
    count: int
    begin_at: int = 0  # v1 beginAt: 0 = any free port, else ports begin_at .. begin_at+count-1


@dataclass
class TaskRequest:
    role: str
    index: int
    cpu: int
    memory_mb: int
    gpu: int
    ports: list[PortRequest] = field(default_factory=list)


@dataclass(frozen=True)
class HeldRoom:
    """Room on a node that a preempted job freed for the job that preempted it, while that job
    waits for its other victims to end: no other job of the pass is given it."""

    node: str
    gpus: tuple[int, ...] = ()
    cpu: int = 0
    memory_mb: int = 0


@dataclass
class JobRequest:
    key: int  # the Job's primary key
    vc: str
    tasks: list[TaskRequest]
    gpu_type: str | None = None  # None = any GPU type
    priority: int = 0  # higher first
    order: float = 0.0  # submit time (epoch seconds); earlier first
    avoid: frozenset[str] = frozenset()  # nodes that cannot run it (e.g. cannot mount its storage)
    user: str = ""  # its owner (the per-user GPU cap, fair share)
    name: str = ""  # its full name (owner~name), for the reasons that name it to others
    usage: float = 0.0  # its owner's recent usage in its VC (clusters.sharing); 0 in a FIFO VC
    may_borrow: bool = False  # its class may run on a lending VC's idle quota
    limit_s: float | None = None  # its time limit (None: none): backfill starts it ahead only if it ends in time
    grace_s: float = 0.0  # the grace its time limit's SIGTERM gives it before its room is free
    # how long it is expected to run once started (its owner's recent jobs' share of their time limits
    # times its own, scheduling.sharing.RunTimes); None: its limit. Only expected starts use it.
    expected_s: float | None = None
    holds: bool = False  # jobs it preempted free (or just freed) room for it: it is taken first
    held: tuple[HeldRoom, ...] = ()  # the room they freed already: kept for it alone

    @property
    def holds_for(self) -> float | None:
        """How long it holds its room at most once started: its time limit and the grace that
        ending gives it (None: no limit)."""
        return self.limit_s + self.grace_s if self.limit_s else None

    @property
    def expected_for(self) -> float | None:
        """How long it is expected to hold its room once started (an estimate: `expected_s`, else
        what it holds at most)."""
        return self.expected_s if self.expected_s is not None and self.limit_s else self.holds_for


@dataclass(frozen=True)
class Freed:
    """What one task of a running job holds on its node, free again when the job ends."""

    node: str
    gpus: tuple[tuple[int, str], ...] = ()  # (index, type)
    cpu: int = 0
    memory_mb: int = 0


@dataclass(frozen=True)
class Ending:
    """A running job that its time limit ends by `ends_at` (epoch seconds), in the VC whose quota
    it holds; its room is free by `frees_at`, after the grace (SIGTERM, then the kill) that ending
    gives it."""

    vc: str
    ends_at: float
    freed: tuple[Freed, ...]
    grace_s: float = 0.0
    # when it is expected to end (an estimate from recent jobs' run times, scheduling.sharing.RunTimes;
    # None: by its limit); only expected starts use it, reservations keep to the limit
    expected_at: float | None = None
    borrowed: bool = False  # it runs on `vc`'s quota lent: `vc`'s own waiting jobs take it back (reclaim)

    @property
    def frees_at(self) -> float:
        return self.ends_at + self.grace_s

    @property
    def expected_free_at(self) -> float:
        return self.frees_at if self.expected_at is None else min(self.expected_at, self.frees_at)


@dataclass(frozen=True)
class Reservation:
    """Where and when a VC's first waiting job is to start (Slurm's backfill reservation)."""

    job: int
    start: float  # epoch seconds
    nodes: tuple[str, ...]


@dataclass
class Backfill:
    """What backfill plans by: the running jobs' ends by their time limits, and the reservations
    an earlier pass gave (kept while their job is still first and the plan can still meet them; one
    it can no longer meet is moved later, a re-plan)."""

    now: float
    ending: list[Ending] = field(default_factory=list)
    kept: dict[str, Reservation] = field(default_factory=dict)  # VC -> its first job's reservation
    # how long a borrowed job is expected to take to end once its lender's own jobs wait (reclaimed:
    # a preemption's SIGTERM and exit); None: not known, it is expected to run on (expected starts only)
    reclaim_s: float | None = None
    # (the start plan's turns) the VCs whose kept reservation may have moved since it was worked out:
    # a job on their quota or on their reserved nodes ended since (the others' stand as kept)
    moved: frozenset[str] = frozenset()
    rework_left: int = 0  # (the start plan's turns) how many more reservations they may work out again


@dataclass(frozen=True)
class Backfilled:
    """A job started ahead of its VC's first waiting job: by its end (`ends_by`, before `start`),
    else on none of the nodes reserved for it (`ends_by` None or after `start`)."""

    ahead_of: int
    ends_by: float | None
    start: float


@dataclass
class TaskPlacement:
    role: str
    index: int
    node: str
    gpus: list[int]
    ports: dict[str, list[int]]


Reason = list[Message]  # why a job waits: its parts (joined by "; " in English)
# What the start plan's turns say of a job left waiting (they work out no reason: only the decision counts)
UNSAID: Reason = [Message("reason.unsaid")]


@dataclass
class PlacementResult:
    placed: dict[int, list[TaskPlacement]] = field(default_factory=dict)
    # job key -> why it is still waiting, with numbers (jobs waiting behind the same one share theirs:
    # read them, do not change them in place)
    pending: dict[int, Reason] = field(default_factory=dict)
    # job keys (also in pending) that cannot fit the cluster as it is, however long they wait
    never_fits: set[int] = field(default_factory=set)
    # each VC's jobs left waiting, in the order the pass took them (its queue: position 1 first)
    queues: dict[str, list[int]] = field(default_factory=dict)
    # job keys placed on another VC's idle quota -> that VC (its quota holds them while they run)
    borrowed: dict[int, str] = field(default_factory=dict)
    # VC -> where and when its first waiting job starts (backfill VCs only, when it can be known)
    reservations: dict[str, Reservation] = field(default_factory=dict)
    backfilled: dict[int, Backfilled] = field(default_factory=dict)  # job keys started ahead by backfill
    # waiting job key -> when it is expected to start (epoch seconds) if the jobs end when expected (recent
    # run times, else their time limits); None: unknown (what it waits for has no limit). Only with a `plan`.
    expected: dict[int, float | None] = field(default_factory=dict)


def place(
    nodes: list[NodeState], vcs: dict[str, VcState], jobs: list[JobRequest], plan: Backfill | None = None
) -> PlacementResult:
    """Place whole jobs (gang) inside their VC's quota; say why for every job left waiting. With
    `plan`, a backfill VC's first waiting job gets a reservation and later jobs start ahead of it
    only where they do not delay it."""
    result = PlacementResult()
    cluster = _Cluster([_Node(state) for state in nodes if state.schedulable])
    used = {name: [vc.used.gpu, vc.used.cpu, vc.used.memory_mb] for name, vc in vcs.items()}
    capped = _UserCaps(vcs)
    ordered = sorted(jobs, key=queue_order)
    needs = [_Need.of(job) for job in ordered]
    down = _DownNodes(nodes, cluster)
    nevers = [down.judge(job, need, vcs) or capped.never(job, need) for job, need in zip(ordered, needs, strict=True)]
    # A VC lends only while none of its own jobs waits (its idle room is not idle then).
    wanting = {job.vc for job, never in zip(ordered, nevers, strict=True) if not never}
    lenders = [name for name, vc in vcs.items() if vc.lends and name not in wanting]
    kept = _HeldRooms(cluster, ordered)
    planner = _Backfiller(cluster, vcs, plan, {job.key for job in ordered})
    lending = _Lending(vcs, lenders, set(), _held(vcs, "lent"), _held(vcs, "borrowed"))
    turns = _Turns(vcs, cluster, used, capped, kept, planner, lending)
    for job, need, never in zip(ordered, needs, nevers, strict=True):
        turns.take(job, need, never, result)
    if plan is not None:
        aside = {job.key for job, never in zip(ordered, nevers, strict=True) if never}
        result.expected = _StartPlan(cluster, vcs, plan, used, lending).run(ordered, needs, nodes, result, aside)
    return result


class _Turns:
    """One pass's rules, job by job in the queue's order (the module's docstring): each job is
    placed on its VC's quota, started ahead of its VC's blocked first job (backfill, borrowing), or
    left waiting, and a VC's first job that waits blocks the VC (and gets its reservation). The
    pass takes its turns once; the start plan (_StartPlan) takes them again at each moment it plays
    forward, `quiet`: what it decides only, no reasons worked out."""

    def __init__(
        self,
        vcs: dict[str, VcState],
        cluster: _Cluster,
        used: dict[str, list[int]],
        capped: _UserCaps,
        kept: _HeldRooms,
        planner: _Backfiller,
        lending: _Lending,
        *,
        quiet: bool = False,
    ) -> None:
        self.vcs, self.cluster, self.used, self.capped = vcs, cluster, used, capped
        self.kept, self.planner, self.lending, self.quiet = kept, planner, lending, quiet
        self.blocked: dict[str, Reason] = {}  # VC -> what its later jobs are told: why its first waiting job waits

    def take(self, job: JobRequest, need: _Need, never: Message | None, result: PlacementResult) -> None:
        vcs, cluster, used, capped, kept = self.vcs, self.cluster, self.used, self.capped, self.kept
        planner, lending = self.planner, self.lending
        blocked = self.blocked
        kept.turn_of(job, result)
        if never:  # (or it waits for a node that is down: set aside too, its VC goes on)
            result.pending[job.key] = [never]
            if never.code not in WAITS_FOR_DOWN:
                result.never_fits.add(job.key)
            result.queues.setdefault(job.vc, []).append(job.key)
            return
        if job.vc in blocked and _ahead(job, need, planner, capped, used, lending, result):
            return
        if job.vc in blocked and not vcs[job.vc].best_effort:
            result.pending[job.key] = blocked[job.vc]  # (one reason, shared: a queue may be long)
            result.queues[job.vc].append(job.key)
            return
        refusal = capped.refusal(job, need)
        if refusal is not None:  # (its owner's cap holds it, not the VC: others' jobs go on)
            result.pending[job.key] = [refusal]
            result.queues.setdefault(job.vc, []).append(job.key)
            return
        quota = _quota_refusal(vcs[job.vc], used[job.vc], need)
        reason: Reason | None = None if quota is None else [quota]
        if reason is not None and not job.may_borrow and not self.quiet:
            # The nodes could not hold it either (others' tasks hold them, memory is short...): that
            # blocks it as much as the quota does, and more plainly, so it is said first. (A job
            # that may borrow is asked below.)
            fits, fitted = cluster.try_place(job, need, dry=True)
            if fits is None:
                reason = [*cluster.why_not(job, need, fitted), *reason]
        if reason is None:
            placements, reason = planner.try_place(job, need)
            if placements is not None:
                result.placed[job.key] = placements
                held = used[job.vc]
                used[job.vc] = [held[0] + need.gpu, held[1] + need.cpu, held[2] + need.memory_mb]
                capped.take(job, need)
                return
        elif job.may_borrow:
            reason = _borrow(job, need, lending, used, planner, result, reason)
            if reason == []:
                return
        if quota is not None and not job.may_borrow:
            lending.quota_only.add(job.vc)
        result.pending[job.key] = reason if self.quiet else reason + kept.note(job)
        result.queues.setdefault(job.vc, []).append(job.key)
        if job.vc in blocked:  # (a best-effort VC's later job: the first one's reason stays)
            return
        if self.quiet:
            blocked[job.vc] = reason
        else:
            behind = "reason.waiting_behind.fair_share" if vcs[job.vc].fair_share else "reason.waiting_behind.fifo"
            blocked[job.vc] = [Message.of(behind, job=job.name or str(job.key), vc=job.vc, why=reason)]
        planner.reserve(job, need, used[job.vc], result)


class _Backfiller:
    """Slurm's backfill over one pass: a backfill VC's blocked first job is given the first moment
    (a running job's end by its time limit) its quota and the nodes hold it, and where; a later job
    of the VC starts now only if it would not delay that: it ends before every reservation on the
    nodes it takes, and what it holds past its own VC's reserved start leaves that job's quota."""

    def __init__(
        self,
        cluster: _Cluster,
        vcs: dict[str, VcState],
        plan: Backfill | None,
        waiting: set[int],
        *,
        quiet: bool = False,
    ) -> None:
        self.cluster, self.vcs, self.plan = cluster, vcs, plan
        self.quiet = quiet  # (the start plan's turns: no reasons worked out, a job that surely does not fit not tried)
        self.reserved: dict[str, tuple[Reservation, list[int]]] = {}  # VC -> reservation, quota left then
        # (quiet) VC -> its first job, what it needs and where its reservation is recorded, while the
        # reservation stands as kept (not worked out again this pass)
        self.as_kept: dict[str, tuple[JobRequest, _Need, dict[str, Reservation]]] = {}
        # An earlier pass's reservations whose jobs still wait hold from this pass's start: a job of
        # another VC taken before that VC's first job comes in this pass's order keeps off its room too.
        self.kept: dict[str, Reservation] = {}
        if plan is not None:
            self.ending = sorted(plan.ending, key=lambda ending: ending.frees_at)
            self.kept = {vc: kept for vc, kept in plan.kept.items() if kept.job in waiting}

    def try_place(self, job: JobRequest, need: _Need) -> tuple[list[TaskPlacement] | None, Reason]:
        """The job placed now (claimed) on none of the nodes another VC's reservation needs before
        the job ends (by its time limit): reservations hold across VCs. Else why not."""
        ends_by = self.plan.now + job.holds_for if self.plan is not None and job.holds_for else None
        if self.quiet and not self.cluster.could_hold(job, need):
            return None, UNSAID
        reserved = [] if job.holds else self._in_the_way(job.vc, ends_by)
        avoid = frozenset(node for reservation in reserved for node in reservation.nodes)
        placements, fitted = self.cluster.try_place(replace(job, avoid=job.avoid | avoid) if avoid else job, need)
        if placements is not None:
            self.started(job)
            return placements, []
        if self.quiet:
            return None, UNSAID
        if avoid and self.cluster.try_place(job, need, dry=True)[0] is not None:
            return None, [Message.of("reason.reserved_room", nodes=sorted(avoid), jobs=[str(r.job) for r in reserved])]
        return None, self.cluster.why_not(job, need, fitted)

    def _in_the_way(self, vc: str, ends_by: float | None) -> list[Reservation]:
        """Other VCs' reservations that a job of `vc` ending by `ends_by` would still hold room at."""
        found = [*self.kept.items(), *((name, reservation) for name, (reservation, _) in self.reserved.items())]
        return [r for name, r in found if name != vc and (ends_by is None or ends_by > r.start)]

    def started(self, job: JobRequest) -> None:
        """A job placed this pass: an earlier pass's reservation for it is used up."""
        kept = self.kept.get(job.vc)
        if kept is not None and kept.job == job.key:
            del self.kept[job.vc]

    def reserve(self, job: JobRequest, need: _Need, used: list[int], result: PlacementResult) -> None:
        vc = self.vcs[job.vc]
        self.kept.pop(job.vc, None)  # (this pass's reservation for the VC's first job replaces it)
        if self.plan is None or not vc.backfill or job.holds:
            return
        kept = self.plan.kept.get(job.vc)
        if (
            self.quiet
            and kept is not None
            and kept.job == job.key
            and kept.start > self.plan.now
            and (
                job.vc not in self.plan.moved
                or self.plan.rework_left <= 0
                or not self._sooner(kept.start, job, need, used)
            )
        ):
            # (the start plan, at a later end: the first job's reservation stands where and when it was
            # given, as it does while nothing takes its room; the quota it leaves is counted again, more
            # of it as jobs end before their limits. Working the reservation out again at each end costs
            # a copy of the nodes each time: ten times the plan's cost, for no better estimate measured.)
            self.reserved[job.vc] = (kept, self._left_at(kept.start, job, need, used))
            result.reservations[job.vc] = kept
            self.as_kept[job.vc] = (job, need, result.reservations)
            return
        self.plan.rework_left -= self.quiet
        found = self._first_start(job, need, used)
        if found is None:  # (what it waits for has no time limit: nothing can be proven, none start ahead)
            return
        reservation, left = found
        # An earlier pass's reservation stands while it can still be met: the first moment the plan
        # holds the job now is its start (its nodes stay reserved too). When that moment is later (a
        # job taken before it in the queue, a requeued or reclaimed one, took the room it counted
        # on), the kept start can no longer be met: the new one replaces it (a re-plan), never a
        # promise the plan knows is broken.
        if kept is not None and kept.job == job.key and kept.start == reservation.start:
            nodes = tuple(sorted({*kept.nodes, *reservation.nodes}))
            reservation = Reservation(job.key, kept.start, nodes)
        self.reserved[job.vc] = (reservation, left)
        result.reservations[job.vc] = reservation

    def _sooner(self, start: float, job: JobRequest, need: _Need, used: list[int]) -> bool:
        """Whether the VC's quota and the cluster's free GPUs (a bound: not the nodes one by one) could
        hold `job` at an end by the limits before `start` (else its reservation cannot move sooner)."""
        assert self.plan is not None
        limit, held = self.vcs[job.vc].limit, list(used)
        free = sum(node.all_free_gpus(job.gpu_type) for node in self.cluster.nodes)
        for ending in self.ending:
            if ending.frees_at >= start:
                return False
            free += sum(len(freed.gpus) for freed in ending.freed)
            if ending.vc == job.vc:
                for freed in ending.freed:
                    held = [held[0] - len(freed.gpus), held[1] - freed.cpu, held[2] - freed.memory_mb]
            fits = held[0] + need.gpu <= limit.gpu and held[1] + need.cpu <= limit.cpu
            if fits and held[2] + need.memory_mb <= limit.memory_mb and free >= need.gpu:
                return True
        return False

    def _left_at(self, start: float, job: JobRequest, need: _Need, used: list[int]) -> list[int]:
        """What the VC's quota has left at `start` once its first job `job` holds its part: what its
        running jobs hold now but those that end by their limits by then (as _first_start counts it)."""
        gpu, cpu, memory = used
        for ending in self.ending:
            if ending.frees_at > start:
                break
            if ending.vc == job.vc:
                for freed in ending.freed:
                    gpu, cpu, memory = gpu - len(freed.gpus), cpu - freed.cpu, memory - freed.memory_mb
        limit = self.vcs[job.vc].limit
        return [limit.gpu - gpu - need.gpu, limit.cpu - cpu - need.cpu, limit.memory_mb - memory - need.memory_mb]

    def _first_start(self, job: JobRequest, need: _Need, used: list[int]) -> tuple[Reservation, list[int]] | None:
        assert self.plan is not None
        limit = self.vcs[job.vc].limit
        scratch = self.cluster.copy()
        others = frozenset(node for reservation in self._in_the_way(job.vc, None) for node in reservation.nodes)
        job = replace(job, avoid=job.avoid | others) if others else job  # (two reservations never share a node)
        by_name = {node.name: node for node in scratch.nodes}
        held = list(used)
        for index, ending in enumerate(self.ending):
            for freed in ending.freed:
                if (node := by_name.get(freed.node)) is not None:
                    scratch.release(node, freed)
            if ending.vc == job.vc:
                for freed in ending.freed:
                    held = [held[0] - len(freed.gpus), held[1] - freed.cpu, held[2] - freed.memory_mb]
            later = self.ending[index + 1] if index + 1 < len(self.ending) else None
            if later is not None and later.frees_at == ending.frees_at:
                continue  # (every end at one moment first)
            left = [
                limit.gpu - held[0] - need.gpu,
                limit.cpu - held[1] - need.cpu,
                limit.memory_mb - held[2] - need.memory_mb,
            ]
            if min(left) < 0 or not scratch.could_hold(job, need):
                continue
            placements, _ = scratch.try_place(job, need)
            if placements is not None:
                start = max(ending.frees_at, self.plan.now)
                return Reservation(job.key, start, tuple(sorted({p.node for p in placements}))), left
        return None

    def backfill(self, job: JobRequest, need: _Need, used: list[int], result: PlacementResult) -> bool:
        """Start `job` ahead of its VC's reserved first job, if that delays no reservation. (The start
        plan's turns, where the first job's reservation stands as it was kept and the job could start
        now but for it: the reservation worked out again, as the pass would, and the job asked again.)"""
        if self._backfill(job, need, used, result):
            return True
        head = self.as_kept.get(job.vc)
        if head is None or _quota_refusal(self.vcs[job.vc], used, need) is not None:
            return False
        assert self.plan is not None
        if self.plan.rework_left <= 0 or not self.cluster.could_hold(job, need):
            return False  # (out of reworks: the reservation stands as kept, as `reserve` leaves it)
        self.plan.rework_left -= 1
        del self.as_kept[job.vc]
        first, first_need, reservations = head
        found = self._first_start(first, first_need, used)
        if found is None:
            del self.reserved[job.vc]
            reservations.pop(job.vc, None)
            return False
        self.reserved[job.vc] = found
        reservations[job.vc] = found[0]
        return self._backfill(job, need, used, result)

    def _backfill(self, job: JobRequest, need: _Need, used: list[int], result: PlacementResult) -> bool:
        assert self.plan is not None
        reservation, left = self.reserved[job.vc]
        if _quota_refusal(self.vcs[job.vc], used, need) is not None:
            return False
        ends_by = self.plan.now + job.holds_for if job.holds_for else None
        past = ends_by is None or ends_by > reservation.start  # it holds its quota past the reserved start
        amounts = (need.gpu, need.cpu, need.memory_mb)
        if past and any(amount > room for amount, room in zip(amounts, left, strict=True)):
            return False
        avoid = {
            node
            for vc_reservation, _ in self.reserved.values()
            if ends_by is None or ends_by > vc_reservation.start
            for node in vc_reservation.nodes
        }
        avoid |= {node for reservation in self._in_the_way(job.vc, ends_by) for node in reservation.nodes}
        if self.quiet and not self.cluster.could_hold(job, need):
            return False
        placements, _ = self.cluster.try_place(replace(job, avoid=job.avoid | avoid), need)
        if placements is None:
            return False
        if past:
            self.reserved[job.vc] = (reservation, [room - amount for room, amount in zip(left, amounts, strict=True)])
        result.placed[job.key] = placements
        result.backfilled[job.key] = Backfilled(reservation.job, ends_by, reservation.start)
        return True


class _StartPlan:
    """When each waiting job is expected to start (Slurm's `squeue --start`, packing and every VC
    included), if the running jobs end when expected (`Ending.expected_at`, `JobRequest.expected_s`:
    recent jobs' run times; by their time limits where not given): the pass's nodes after its
    placements, played forward from one end to the next. At each end the pass's own turns (_Turns)
    are taken again over the jobs left waiting, as the pass that end brings would take them: in the
    queue's order across VCs, on the nodes indexed afresh (a pass takes nodes with as many free GPUs
    in the nodes' order), so quotas, packing, strict and best-effort queues, borrowing within the
    lending and borrowing limits, and backfill, each backfill VC's first job's reservation worked out
    again from the time limits of what runs then (as that pass works it out, not as this pass did),
    all as the scheduler decides them. A job running on a lender's quota while the lender's own jobs
    wait is expected to be taken back within `Backfill.reclaim_s`. A started job holds its room until
    its expected end (for good without a limit); the reservations count it until its limit and grace.
    A job not started when no end is left is unknown (None), as is one deeper than ESTIMATED_DEPTH in
    its VC's queue, or one set aside (it waits for a node that is down). A first job with a
    reservation is expected at its reserved start (the start it was promised) unless it is played
    earlier. Not played: per-user GPU caps, preemptions not begun yet, jobs not submitted yet."""

    def __init__(
        self,
        cluster: _Cluster,
        vcs: dict[str, VcState],
        plan: Backfill,
        used: dict[str, list[int]],
        lending: _Lending,
    ) -> None:
        self.cluster, self.vcs, self.now = cluster.copy(), vcs, plan.now
        self.used = {name: list(held) for name, held in used.items()}
        self.lent = {name: list(held) for name, held in lending.lent.items()}
        self.borrowed = {name: list(held) for name, held in lending.borrowed.items()}
        self.by_name = {node.name: node for node in self.cluster.nodes}
        self.order = itertools.count()
        # (when its room is expected free, tie-break, the VC whose quota it holds, what it frees, its own
        # VC when borrowed, when its room is free at the latest: by its limit and grace)
        self.ends: list[tuple[float, int, str, tuple[Freed, ...], str | None, float]] = []
        # the running jobs' ends by their limits, as a pass's plan has them (its reservations count them):
        # (when free, the tie-break of its entry in `ends`, the end), in that order
        self.limits: list[tuple[float, int, Ending]] = []
        for ending in plan.ending:
            order = next(self.order)
            self.ends.append((ending.expected_free_at, order, ending.vc, ending.freed, None, ending.frees_at))
            self.limits.append((ending.frees_at, order, ending))
        self.limits.sort(key=lambda entry: entry[:2])
        self.reclaim_s = plan.reclaim_s
        self.borrowed_ends = [index for index, ending in enumerate(plan.ending) if ending.borrowed]
        self.types: dict[str, dict[int, str]] = {}  # node -> GPU index -> type (for what a played job frees)
        for ending in plan.ending:
            for freed in ending.freed:
                self.types.setdefault(freed.node, {}).update(freed.gpus)
        # each VC's reservation as the last turns left it (the next ones keep it as a pass keeps the stored one)
        self.kept: dict[str, Reservation] = {}
        self.moved: set[str] = set()  # VCs whose kept reservation may have moved since (Backfill.moved)
        self.rework_left = REWORKED_RESERVATIONS
        # (per-user caps are not played: what each user holds as jobs end is not known here)
        self.uncapped = _UserCaps({name: replace(vc, user_gpu_limit=None) for name, vc in vcs.items()})

    def run(
        self,
        ordered: list[JobRequest],
        needs: list[_Need],
        nodes: list[NodeState],
        result: PlacementResult,
        aside: set[int],
    ) -> dict[int, float | None]:
        for state in nodes:
            self.types.setdefault(state.name, {}).update(state.gpus_free)
        for job in ordered:
            if job.key in result.placed:
                self._started(job, result.placed[job.key], result.borrowed.get(job.key), self.now)
        need_of = {job.key: (job, need) for job, need in zip(ordered, needs, strict=True)}
        queues = {
            vc: [need_of[key] for key in keys if key not in result.never_fits and key not in aside][:ESTIMATED_DEPTH]
            for vc, keys in result.queues.items()
            if vc in self.vcs
        }
        if self.reclaim_s is not None:  # (a lender whose own jobs wait takes its quota back)
            soon = self.now + self.reclaim_s
            for index in self.borrowed_ends:
                at, order, vc, freed, borrower, latest = self.ends[index]
                if queues.get(vc) and soon < at:
                    self.ends[index] = (soon, order, vc, freed, borrower, latest)
        heapq.heapify(self.ends)
        waiting = sorted((pair for queue in queues.values() for pair in queue), key=lambda pair: queue_order(pair[0]))
        starts: dict[int, float | None] = {key: None for keys in result.queues.values() for key in keys}
        self.kept = dict(result.reservations)
        # (what fits now the pass itself placed: the plan plays on from the next end)
        moment = self._release_next()
        while moment is not None and waiting:
            started = self._turns_at(moment, waiting)
            while started:  # (a pass that started jobs is followed by another at once)
                starts.update((key, moment) for key in started)
                waiting = [pair for pair in waiting if pair[0].key not in started]
                started = self._turns_at(moment, waiting) if waiting else set()
            moment = self._release_next()
        for reservation in result.reservations.values():
            played = starts.get(reservation.job)
            starts[reservation.job] = reservation.start if played is None else min(played, reservation.start)
        return starts

    def _turns_at(self, moment: float, waiting: list[tuple[JobRequest, _Need]]) -> set[int]:
        """The pass at `moment` over the jobs left waiting: those it starts."""
        self.cluster = cluster = _Cluster(self.cluster.nodes)  # (indexed afresh, in the nodes' order, as a pass)
        wanting = {job.vc for job, _ in waiting}
        lenders = [name for name, vc in self.vcs.items() if vc.lends and name not in wanting]
        lending = _Lending(self.vcs, lenders, set(), self.lent, self.borrowed)
        ending = [end for _, _, end in self.limits]
        plan = Backfill(moment, ending, self.kept, moved=frozenset(self.moved), rework_left=self.rework_left)
        self.moved.clear()
        planner = _Backfiller(cluster, self.vcs, plan, {job.key for job, _ in waiting}, quiet=True)
        turns = _Turns(
            self.vcs, cluster, self.used, self.uncapped, _HeldRooms(cluster, []), planner, lending, quiet=True
        )
        result = PlacementResult()
        for job, need in waiting:
            turns.take(job, need, None, result)
        self.kept = dict(result.reservations)
        self.rework_left = plan.rework_left
        if not result.placed:
            return set()
        # (the next pass counts the jobs started here by their limits: its reservations may move sooner)
        self.moved.update(self.kept)
        for job, _ in waiting:
            if job.key in result.placed:
                self._started(job, result.placed[job.key], result.borrowed.get(job.key), moment)
        return set(result.placed)

    def _started(self, job: JobRequest, placements: list[TaskPlacement], lender: str | None, moment: float) -> None:
        """A job started at `moment` (its room taken already): it ends when expected, by its limit at the latest."""
        if not job.expected_for:
            return  # (no limit: it holds its room for good)
        holder, order, freed = lender or job.vc, next(self.order), self._freed(job, placements)
        latest = math.inf
        if job.limit_s:
            limit = Ending(holder, moment + job.limit_s, freed, grace_s=job.grace_s, borrowed=lender is not None)
            latest = limit.frees_at
            bisect.insort(self.limits, (latest, order, limit), key=lambda entry: entry[:2])
        heapq.heappush(self.ends, (moment + job.expected_for, order, holder, freed, lender and job.vc, latest))

    def _freed(self, job: JobRequest, placements: list[TaskPlacement]) -> tuple[Freed, ...]:
        tasks = {(task.role, task.index): task for task in job.tasks}
        freed = []
        for placement in placements:
            task, types = tasks[(placement.role, placement.index)], self.types.get(placement.node, {})
            gpus = tuple((index, types.get(index, job.gpu_type or "")) for index in placement.gpus)
            freed.append(Freed(placement.node, gpus, task.cpu, task.memory_mb))
        return tuple(freed)

    def _release_next(self) -> float | None:
        """Free everything that ends at the next end: that moment, or None when nothing is left to end."""
        if not self.ends:
            return None
        moment = self.ends[0][0]
        while self.ends and self.ends[0][0] == moment:
            _, order, vc, freed, borrower, latest = heapq.heappop(self.ends)
            if latest != math.inf:
                index = bisect.bisect_left(self.limits, (latest, order), key=lambda entry: entry[:2])
                if index < len(self.limits) and self.limits[index][1] == order:
                    del self.limits[index]
            self.moved.add(vc)
            self.moved.update(
                name for name, kept in self.kept.items() if any(part.node in kept.nodes for part in freed)
            )
            for part in freed:
                if (node := self.by_name.get(part.node)) is not None:
                    self.cluster.release(node, part)
                amounts = (len(part.gpus), part.cpu, part.memory_mb)
                if vc in self.used:
                    self.used[vc] = [held - amount for held, amount in zip(self.used[vc], amounts, strict=True)]
                if borrower is not None and vc in self.lent and borrower in self.borrowed:
                    self.lent[vc] = [held - amount for held, amount in zip(self.lent[vc], amounts, strict=True)]
                    self.borrowed[borrower] = [
                        held - amount for held, amount in zip(self.borrowed[borrower], amounts, strict=True)
                    ]
        return max(moment, self.now)


@dataclass
class _Lending:
    vcs: dict[str, VcState]
    lenders: list[str]
    quota_only: set[str]  # VCs whose first waiting job waits on its own quota and may not borrow
    lent: dict[str, list[int]]  # VC -> what other VCs' jobs hold of its quota (GPUs, CPUs, memory)
    borrowed: dict[str, list[int]]  # VC -> what its jobs hold of lenders' quotas


def _held(vcs: dict[str, VcState], what: str) -> dict[str, list[int]]:
    return {name: list(_triple(getattr(vc, what))) for name, vc in vcs.items()}


def _triple(res: Resources) -> tuple[int, int, int]:
    return res.gpu, res.cpu, res.memory_mb


def _ahead(
    job: JobRequest,
    need: _Need,
    planner: _Backfiller,
    capped: _UserCaps,
    used: dict[str, list[int]],
    lending: _Lending,
    result: PlacementResult,
) -> bool:
    """A job of a VC whose first waiting job is blocked, started ahead of it: by backfill (where
    that delays no reservation), else on a lender's idle quota when that first job waits on its own
    VC's quota and may not borrow (it could never use that room: borrowing is judged per job).
    Never on its own VC's quota but by backfill: that is the first job's."""
    if capped.refusal(job, need) is not None:
        return False
    if job.vc in planner.reserved and planner.backfill(job, need, used[job.vc], result):
        used[job.vc] = [a + b for a, b in zip(used[job.vc], (need.gpu, need.cpu, need.memory_mb), strict=True)]
        capped.take(job, need)
        return True
    if not job.may_borrow or job.vc not in lending.quota_only:
        return False
    return _borrow(job, need, lending, used, planner, result, []) == []


def _borrow(
    job: JobRequest,
    need: _Need,
    lending: _Lending,
    used: dict[str, list[int]],
    planner: _Backfiller,
    result: PlacementResult,
    refused: Reason,
) -> Reason:
    """The job placed on a lender's idle quota (counted against it): [] when it is; else why not:
    `refused` (its own VC's quota's refusal) and why it may not borrow or no lender has the room, or
    why the nodes do not hold it."""
    over = _borrowing_refusal(lending.vcs[job.vc], lending.borrowed[job.vc], need)
    if over is not None:
        return [*refused, over]
    lender = _lender(job, need, lending, used)
    if lender is None:
        return [*refused, Message.of("reason.no_lender")]
    placements, why = planner.try_place(job, need)
    if placements is None:
        return why
    result.placed[job.key] = placements
    result.borrowed[job.key] = lender
    for held, name in ((used, lender), (lending.lent, lender), (lending.borrowed, job.vc)):
        held[name] = [a + b for a, b in zip(held[name], (need.gpu, need.cpu, need.memory_mb), strict=True)]
    return []


def _lender(job: JobRequest, need: _Need, lending: _Lending, used: dict[str, list[int]]) -> str | None:
    """The lending VC whose idle quota holds the whole job within its lending limit, the one with
    the most such room."""
    best: tuple[tuple[int, ...], str] | None = None
    for name in lending.lenders:
        if name == job.vc:
            continue
        vc = lending.vcs[name]
        room = _lendable_room(vc, used[name], lending.lent[name])
        if any(free < wanted for free, wanted in zip(room, need[:3], strict=True)):
            continue
        if best is None or room > best[0]:
            best = (room, name)
    return best[1] if best is not None else None


def _lendable_room(vc: VcState, used: Sequence[int], lent: Sequence[int]) -> tuple[int, ...]:
    """What a lending VC's quota has free, within its lending limit (what it keeps for its own
    jobs is not lent)."""
    room = tuple(limit - held for limit, held in zip(_triple(vc.limit), used, strict=True))
    if vc.lending_limit is not None:
        may_lend = zip(_triple(vc.lending_limit), lent, strict=True)
        room = tuple(min(free, cap - out) for free, (cap, out) in zip(room, may_lend, strict=True))
    return room


def _borrowing_refusal(vc: VcState, borrowed: list[int], need: _Need) -> Message | None:
    """Why the VC's jobs may not borrow this much more (its borrowing limit), or None."""
    if vc.borrowing_limit is None:
        return None
    (gpu, cpu, memory), limit = borrowed, vc.borrowing_limit
    if gpu + need.gpu > limit.gpu:
        return Message.of("reason.borrowing_limit.gpu", vc=vc.name, used=gpu, limit=limit.gpu, need=need.gpu)
    if cpu + need.cpu > limit.cpu:
        return Message.of("reason.borrowing_limit.cpu", vc=vc.name, used=cpu, limit=limit.cpu, need=need.cpu)
    if memory + need.memory_mb > limit.memory_mb:
        return Message.of(
            "reason.borrowing_limit.memory",
            vc=vc.name,
            used=memory_text(memory),
            limit=memory_text(limit.memory_mb),
            need=memory_text(need.memory_mb),
        )
    return None


def queue_order(job: JobRequest) -> tuple[bool, int, float, float, int]:
    """The order jobs are taken in: those the room of a preemption is held for first, then
    priority (higher first), then the owner's recent usage (fair share VCs; 0 in FIFO ones), then
    submit time."""
    return (not job.holds, -job.priority, job.usage, job.order, job.key)


class _HeldRooms:
    """The room each waiting job's victims freed for it, out of the pass from the start; a job gets
    its own back when its turn comes, and gives it up only once placed (else it is kept again)."""

    def __init__(self, cluster: _Cluster, jobs: list[JobRequest]) -> None:
        self.cluster = cluster
        self.taken = {job.key: cluster.hold(job.held) for job in jobs if job.held}
        self.holder: JobRequest | None = None  # the job that has its room back for its turn

    def note(self, job: JobRequest) -> Reason:
        """What a job left waiting is told of the room kept for others."""
        held = [(key, sorted({node.name for node, *_ in taken})) for key, taken in self.taken.items() if key != job.key]
        return [Message.of("reason.held_room", nodes=nodes, job=key) for key, nodes in held if nodes]

    def turn_of(self, job: JobRequest, result: PlacementResult) -> None:
        holder, self.holder = self.holder, None
        if holder is not None and holder.key not in result.placed:
            self.taken[holder.key] = self.cluster.hold(holder.held)  # still waiting: kept for it
        if job.key in self.taken:
            self.cluster.give_back(self.taken.pop(job.key))
            self.holder = job


class _UserCaps:
    """The per-user GPU cap of each VC that has one, as the pass hands GPUs out."""

    def __init__(self, vcs: dict[str, VcState]) -> None:
        self.vcs = vcs
        self.held = {name: dict(vc.gpus_by_user) for name, vc in vcs.items() if vc.user_gpu_limit is not None}

    def never(self, job: JobRequest, need: _Need) -> Message | None:
        vc = self.vcs.get(job.vc)
        cap = vc.user_gpu_limit if vc is not None else None
        if cap is not None and need.gpu > cap:
            return Message.of(
                "reason.never_fits", why=Message.of("reason.user_cap_in_all", cap=cap, vc=job.vc, need=need.gpu)
            )
        return None

    def refusal(self, job: JobRequest, need: _Need) -> Message | None:
        cap = self.vcs[job.vc].user_gpu_limit
        if cap is None or not need.gpu:
            return None
        held = self.held[job.vc].get(job.user, 0)
        if held + need.gpu <= cap:
            return None
        return Message.of("reason.user_cap", user=job.user, held=held, cap=cap, vc=job.vc, need=need.gpu)

    def take(self, job: JobRequest, need: _Need) -> None:
        if job.vc in self.held:
            self.held[job.vc][job.user] = self.held[job.vc].get(job.user, 0) + need.gpu


def never_fitting(nodes: list[NodeState], vcs: dict[str, VcState], jobs: list[JobRequest]) -> dict[int, Reason]:
    """Job key -> why it can never fit the cluster as it is, for the jobs that cannot: the
    judgement `place` makes of each job first (the dashboard sorts waiting jobs by it without
    placing them). With no schedulable node at all, no job is judged: they all wait for nodes."""
    cluster = _Cluster([_Node(state) for state in nodes if state.schedulable])
    if not cluster.nodes:
        return {}  # nothing to judge by: every job waits for nodes to come back
    down = _DownNodes(nodes, cluster)
    capped = _UserCaps(vcs)
    reasons = {}
    for job in jobs:
        need = _Need.of(job)
        reason = down.judge(job, need, vcs) or capped.never(job, need)
        if reason and reason.code not in WAITS_FOR_DOWN:
            reasons[job.key] = [reason]
    return reasons


# ---- VC shares -----------------------------------------------------------------------------


def apportion(shares: dict[str, Decimal], totals: Resources) -> dict[str, Resources]:
    """Each VC's quota: its percentage share of `totals`, in whole GPUs, CPUs and MB, by largest
    remainder (Hamilton) per resource. Flooring each share alone would lose units (60 % and 40 %
    of 2 CPUs floored are 1 and 0: one CPU nobody may use); here the units the shares add up to
    (all of them when the shares sum to 100 %) are handed out: first each VC's whole part, then
    one each to the largest fractional parts (ties: the larger share, then the name)."""
    quotas: dict[str, list[int]] = {name: [] for name in shares}
    total_share = sum((Decimal(share) for share in shares.values()), Decimal(0))
    for total in (totals.gpu, totals.cpu, totals.memory_mb):
        exact = {name: Decimal(total) * Decimal(share) / 100 for name, share in shares.items()}
        whole = {name: int(value) for name, value in exact.items()}
        left = int(Decimal(total) * total_share / 100) - sum(whole.values())
        by_remainder = sorted(shares, key=lambda name: (-(exact[name] - whole[name]), -Decimal(shares[name]), name))
        for name in by_remainder[: max(left, 0)]:
            whole[name] += 1
        for name in shares:
            quotas[name].append(whole[name])
    return {name: Resources(gpu=gpu, cpu=cpu, memory_mb=memory) for name, (gpu, cpu, memory) in quotas.items()}


def empty_shares(quotas: dict[str, Resources], totals: Resources) -> dict[str, list[str]]:
    """VC -> the resources ("gpu", "cpu", "memory") the cluster has but its share gives it none
    of: no job of that VC asking for them can ever run there."""
    empty: dict[str, list[str]] = {}
    for name, quota in quotas.items():
        kinds = [
            kind
            for kind, have, total in (
                ("gpu", quota.gpu, totals.gpu),
                ("cpu", quota.cpu, totals.cpu),
                ("memory", quota.memory_mb, totals.memory_mb),
            )
            if total > 0 and have == 0
        ]
        if kinds:
            empty[name] = kinds
    return empty


# ---- reasons -------------------------------------------------------------------------------


class _Need(NamedTuple):
    """A job's totals (for quota and whole-job fits) and its biggest task (for never-fits checks)."""

    gpu: int
    cpu: int
    memory_mb: int
    task_gpu: int
    task_cpu: int
    task_memory_mb: int

    @staticmethod
    def of(job: JobRequest) -> _Need:
        gpu = cpu = memory = top_gpu = top_cpu = top_memory = 0
        for task in job.tasks:
            gpu += task.gpu
            cpu += task.cpu
            memory += task.memory_mb
            if task.gpu > top_gpu:
                top_gpu = task.gpu
            if task.cpu > top_cpu:
                top_cpu = task.cpu
            if task.memory_mb > top_memory:
                top_memory = task.memory_mb
        return _Need(gpu, cpu, memory, top_gpu, top_cpu, top_memory)


def _quota_refusal(vc: VcState, used: list[int], need: _Need) -> Message | None:
    (used_gpu, used_cpu, used_memory), (gpu, cpu, memory) = used, (need.gpu, need.cpu, need.memory_mb)
    if used_gpu + gpu > vc.limit.gpu:
        return Message.of("reason.quota.gpu", vc=vc.name, used=used_gpu, limit=vc.limit.gpu, need=gpu)
    if used_cpu + cpu > vc.limit.cpu:
        return Message.of("reason.quota.cpu", vc=vc.name, used=used_cpu, limit=vc.limit.cpu, need=cpu)
    if used_memory + memory > vc.limit.memory_mb:
        return Message.of(
            "reason.quota.memory",
            vc=vc.name,
            used=memory_text(used_memory),
            limit=memory_text(vc.limit.memory_mb),
            need=memory_text(memory),
        )
    return None


# The reasons of a job that waits for nodes that are down (it does not fit without them).
WAITS_FOR_DOWN = frozenset({"reason.waits_for_node", "reason.waits_for_nodes"})


class _DownNodes:
    """The never-fits judgement with the nodes that are down now counted as coming back: a job
    that fits only with them waits for them (its reason says which), not "can never fit"."""

    def __init__(self, nodes: list[NodeState], cluster: _Cluster) -> None:
        self.cluster = cluster
        self.names = [state.name for state in nodes if not state.schedulable and state.down]
        self._states = nodes
        self._with_down: _Cluster | None = None

    def judge(self, job: JobRequest, need: _Need, vcs: dict[str, VcState]) -> Message | None:
        never = _never_fits(job, need, vcs, self.cluster)
        if never is None or not self.names:
            return never
        if self._with_down is None:
            self._with_down = _Cluster([_Node(state) for state in self._states if state.schedulable or state.down])
        vc = vcs.get(job.vc)
        limit = vc.limit_with_down if vc is not None else None
        if _never_fits(job, need, vcs, self._with_down, limit) is not None:
            return never
        why = never.params["why"] if never.code == "reason.never_fits" else never
        assert isinstance(why, Message)
        if len(self.names) > 1:
            return Message.of("reason.waits_for_nodes", why=why, nodes=self.names)
        return Message.of("reason.waits_for_node", why=why, node=self.names[0])


def _never_fits(
    job: JobRequest, need: _Need, vcs: dict[str, VcState], cluster: _Cluster, limit: Resources | None = None
) -> Message | None:
    """Why the job cannot fit even an idle cluster of today's nodes (so it must not block its VC);
    `limit`: its VC's quota, when not the one it has now."""
    if not job.tasks:
        return Message.of("reason.no_tasks")
    if job.vc not in vcs:
        return Message.of("reason.unknown_vc", vc=job.vc)
    if not cluster.nodes:
        return Message.of("reason.no_node")
    why = _too_big(job, need, cluster, limit or vcs[job.vc].limit)
    return (
        None if why is None else why if why.code == "reason.port_outside" else Message.of("reason.never_fits", why=why)
    )


def _too_big(job: JobRequest, need: _Need, cluster: _Cluster, limit: Resources) -> Message | None:
    gpu, cpu, memory = need.gpu, need.cpu, need.memory_mb
    if gpu > limit.gpu:
        return Message.of("reason.quota_in_all.gpu", vc=job.vc, limit=limit.gpu, need=gpu)
    if cpu > limit.cpu:
        return Message.of("reason.quota_in_all.cpu", vc=job.vc, limit=limit.cpu, need=cpu)
    if memory > limit.memory_mb:
        return Message.of(
            "reason.quota_in_all.memory", vc=job.vc, limit=memory_text(limit.memory_mb), need=memory_text(memory)
        )
    if need.task_gpu > cluster.max_gpus:
        return Message.of("reason.largest_node.gpu", need=need.task_gpu, most=cluster.max_gpus)
    if need.task_cpu > cluster.max_cpus:
        return Message.of("reason.largest_node.cpu", need=need.task_cpu, most=cluster.max_cpus)
    if need.task_memory_mb > cluster.max_memory:
        return Message.of(
            "reason.largest_node.memory", need=memory_text(need.task_memory_mb), most=memory_text(cluster.max_memory)
        )
    checked: set[int] = set()
    for task in job.tasks:
        if id(task.ports) in checked:  # tasks of a role usually share one list
            continue
        checked.add(id(task.ports))
        for request in task.ports:
            if request.begin_at and (request.begin_at < 1 or request.begin_at + request.count - 1 > MAX_PORT):
                begin_at, count = request.begin_at, request.count
                return Message.of(
                    "reason.port_outside", label=request.label, begin_at=begin_at, count=count, most=MAX_PORT
                )
            if not request.begin_at and request.count > cluster.max_port_range:
                return Message.of(
                    "reason.largest_node.ports", count=request.count, label=request.label, most=cluster.max_port_range
                )
    return None


# ---- the cluster's free resources during one pass -------------------------------------------

_Plan = list[tuple[TaskRequest, str | None, dict[str, list[int]]]]  # task, GPU type it takes, its ports


class _Node:
    """One schedulable node's free resources, updated as the pass hands them out."""

    __slots__ = (
        "capacity",
        "cpu",
        "cursor",
        "gpus",
        "loopback",
        "memory",
        "name",
        "owns_ports",
        "port_high",
        "port_low",
        "ports_just_freed",
        "ports_used",
    )

    def __init__(self, state: NodeState) -> None:
        self.name = state.name
        self.loopback = state.loopback
        self.cpu = state.cpu_free
        self.memory = state.memory_free_mb
        self.gpus: dict[str, list[int]] = {}  # type -> free indices, ascending
        for gpu_index in sorted(state.gpus_free):
            self.gpus.setdefault(state.gpus_free[gpu_index], []).append(gpu_index)
        self.ports_used = state.ports_used  # copied on the first claim: the input stays untouched
        self.ports_just_freed = state.ports_just_freed
        self.owns_ports = False
        self.port_low, self.port_high = state.port_range
        self.cursor = self.port_low  # every port of the range below it is in use
        # what the node holds when idle (an unknown CPU/memory total counts as unbounded)
        self.capacity = Resources(
            gpu=max(state.gpu_total, len(state.gpus_free)),
            cpu=max(state.cpu_total, state.cpu_free) if state.cpu_total else UNKNOWN_TOTAL,
            memory_mb=max(state.memory_total_mb, state.memory_free_mb) if state.memory_total_mb else UNKNOWN_TOTAL,
        )

    def twin(self) -> _Node:
        """A copy of its free resources now, apart (its ports copied on its first claim)."""
        twin = _Node.__new__(_Node)
        twin.name, twin.loopback, twin.cpu, twin.memory = self.name, self.loopback, self.cpu, self.memory
        twin.gpus = {kind: list(indices) for kind, indices in self.gpus.items()}
        twin.ports_used, twin.owns_ports, twin.ports_just_freed = self.ports_used, False, self.ports_just_freed
        twin.port_low, twin.port_high, twin.cursor = self.port_low, self.port_high, self.cursor
        twin.capacity = self.capacity
        return twin

    def free_gpus(self, gpu_type: str | None) -> int:
        if gpu_type is None:
            return max(map(len, self.gpus.values()), default=0)
        return len(self.gpus.get(gpu_type, ()))

    def all_free_gpus(self, gpu_type: str | None) -> int:
        if gpu_type is None:
            return sum(map(len, self.gpus.values()))
        return len(self.gpus.get(gpu_type, ()))

    def pick_ports(self, requests: Iterable[PortRequest], taken: set[int]) -> dict[str, list[int]] | None:
        """Ports for one task (also avoiding `taken`, which grows by them), or None when they are not
        free: ports just freed only when the others will not do."""
        requests = list(requests)
        if self.ports_just_freed:
            trial = set(taken) | self.ports_just_freed
            if (picked := self._pick_ports(requests, trial)) is not None:
                taken.update(port for ports in picked.values() for port in ports)
                return picked
        return self._pick_ports(requests, taken)

    def _pick_ports(self, requests: list[PortRequest], taken: set[int]) -> dict[str, list[int]] | None:
        used = self.ports_used
        while self.cursor in used:
            self.cursor += 1
        picked: dict[str, list[int]] = {}
        port = self.cursor
        for request in requests:
            if request.begin_at:
                ports = list(range(request.begin_at, request.begin_at + request.count))
                if any(number in used or number in taken for number in ports):
                    return None
            else:
                ports = []
                while len(ports) < request.count:
                    if port > self.port_high:
                        return None
                    if port not in used and port not in taken:
                        ports.append(port)
                    port += 1
            taken.update(ports)
            picked[request.label] = ports
        return picked

    def claim_ports(self, ports: Iterable[int]) -> None:
        if not self.owns_ports:
            self.ports_used = set(self.ports_used)
            self.owns_ports = True
        self.ports_used.update(ports)

    def release_ports(self, ports: Iterable[int]) -> None:
        for port in ports:
            self.ports_used.discard(port)
            if self.port_low <= port < self.cursor:
                self.cursor = port

    def plan(self, tasks: list[TaskRequest], gpu_type: str | None) -> _Plan | None:
        """How these tasks would all fit on this node now, or None."""
        cpu, memory, taken = self.cpu, self.memory, set[int]()
        free = {kind: len(indices) for kind, indices in self.gpus.items()}
        plan: _Plan = []
        for task in tasks:
            if task.cpu > cpu or task.memory_mb > memory:
                return None
            kind = None
            if task.gpu:
                kind = _pick_gpu_type(free, task.gpu, gpu_type)
                if kind is None:
                    return None
                free[kind] -= task.gpu
            ports = self.pick_ports(task.ports, taken)
            if ports is None:
                return None
            cpu -= task.cpu
            memory -= task.memory_mb
            plan.append((task, kind, ports))
        return plan


def _pick_gpu_type(free: dict[str, int], count: int, wanted: str | None) -> str | None:
    if wanted is not None:
        return wanted if free.get(wanted, 0) >= count else None
    kind = max(free, key=free.__getitem__, default=None)  # all of a task's GPUs are of one type
    return kind if kind is not None and free[kind] >= count else None


class _Cluster:
    """The nodes of one pass, bucketed by free GPU count (per type and for any type), so that a
    fitting node is found without scanning every node."""

    def __init__(self, nodes: list[_Node]) -> None:
        self.nodes = nodes
        self.buckets: dict[str, dict[int, dict[_Node, None]]] = {}
        for node in nodes:
            self._index(node)
        self.max_gpus = max((node.capacity.gpu for node in nodes), default=0)
        self.max_cpus = max((node.capacity.cpu for node in nodes), default=0)
        self.max_memory = max((node.capacity.memory_mb for node in nodes), default=0)
        self.max_port_range = max((node.port_high - node.port_low + 1 for node in nodes), default=0)
        # the last try_place's task that fit no node once the job's other tasks were placed, and why
        self.left_over: Reason | None = None

    def copy(self) -> _Cluster:
        """The nodes as they are now, apart (backfill plans on it; the pass goes on with this one)."""
        return _Cluster([node.twin() for node in self.nodes])

    def could_hold(self, job: JobRequest, need: _Need) -> bool:
        """False when the nodes surely cannot hold the job now (a quick bound from the free-GPU
        buckets: nodes with room for its biggest GPU task, and for all its tasks when they are alike)."""
        if not need.task_gpu:
            return True
        by_count = self.buckets.get(job.gpu_type or ANY_TYPE, {})
        if not any(nodes for count, nodes in by_count.items() if count >= need.task_gpu):
            return False
        if len(job.tasks) == 1 or need.gpu != need.task_gpu * len(job.tasks):
            return True
        room = sum(
            len(free) // need.task_gpu
            for node in self.nodes
            for kind, free in node.gpus.items()
            if job.gpu_type in (None, kind)
        )
        return room >= len(job.tasks)

    def release(self, node: _Node, freed: Freed) -> None:
        """A running job's task gone from `node`: what it held is free."""
        self._unindex(node)
        for index, kind in freed.gpus:
            free = node.gpus.setdefault(kind, [])
            if index not in free:
                free.append(index)
                free.sort()
        node.cpu += freed.cpu
        node.memory += freed.memory_mb
        self._index(node)

    def hold(self, rooms: Iterable[HeldRoom]) -> list[tuple[_Node, dict[str, list[int]], int, int]]:
        """What of `rooms` is free now, taken out of the pass; returned for give_back."""
        by_name = {node.name: node for node in self.nodes}
        taken = []
        for room in rooms:
            node = by_name.get(room.node)
            if node is None:  # (not schedulable now)
                continue
            self._unindex(node)
            gpus: dict[str, list[int]] = {}
            for kind, free in node.gpus.items():
                if mine := [index for index in free if index in room.gpus]:
                    gpus[kind] = mine
                    node.gpus[kind] = [index for index in free if index not in room.gpus]
            cpu, memory = max(0, min(node.cpu, room.cpu)), max(0, min(node.memory, room.memory_mb))
            node.cpu -= cpu
            node.memory -= memory
            self._index(node)
            taken.append((node, gpus, cpu, memory))
        return taken

    def give_back(self, taken: list[tuple[_Node, dict[str, list[int]], int, int]]) -> None:
        for node, gpus, cpu, memory in taken:
            self._unindex(node)
            for kind, indices in gpus.items():
                node.gpus[kind] = sorted(node.gpus[kind] + indices)
            node.cpu += cpu
            node.memory += memory
            self._index(node)

    def _index(self, node: _Node) -> None:
        most = max(map(len, node.gpus.values()), default=0)  # (node.free_gpus(None), once)
        buckets = self.buckets
        buckets.setdefault(ANY_TYPE, {}).setdefault(most, {})[node] = None
        for key, free in node.gpus.items():
            buckets.setdefault(key, {}).setdefault(most if key == ANY_TYPE else len(free), {})[node] = None

    def _unindex(self, node: _Node) -> None:
        most = max(map(len, node.gpus.values()), default=0)
        buckets = self.buckets
        del buckets[ANY_TYPE][most][node]
        for key, free in node.gpus.items():
            if key != ANY_TYPE:  # (a type named "*" is the any-type bucket, gone already)
                del buckets[key][len(free)][node]

    def _candidates(self, gpus: int, gpu_type: str | None, *, most_free_first: bool) -> Iterator[_Node]:
        by_count = self.buckets.get(gpu_type if gpu_type and gpus else ANY_TYPE, {})
        for count in sorted(by_count, reverse=most_free_first):
            if count >= gpus:
                yield from by_count[count]

    def _most_free_gpus(self, gpu_type: str | None) -> tuple[int, _Node | None]:
        by_count = self.buckets.get(gpu_type or ANY_TYPE, {})
        for count in sorted(by_count, reverse=True):
            if by_count[count]:
                return count, next(iter(by_count[count]))
        return 0, None

    def _first_fit(
        self,
        tasks: list[TaskRequest],
        gpu_type: str | None,
        need: _Need,
        *,
        most_free_first: bool,
        loopback: bool | None = None,
        avoid: frozenset[str] = frozenset(),
    ) -> tuple[_Node, _Plan] | None:
        """The first node that holds all `tasks` now (among loopback or other nodes only, when given)."""
        gpus, cpu, memory = need.gpu, need.cpu, need.memory_mb
        for node in self._candidates(gpus, gpu_type, most_free_first=most_free_first):
            if node.cpu < cpu or node.memory < memory or (loopback is not None and node.loopback != loopback):
                continue
            if node.name in avoid:
                continue
            plan = node.plan(tasks, gpu_type)
            if plan is not None:
                return node, plan
        return None

    def _commit(self, node: _Node, plan: _Plan, log: list[tuple[_Node, TaskPlacement, str | None]]) -> None:
        self._unindex(node)
        for task, kind, ports in plan:
            gpus: list[int] = []
            if kind is not None:
                free = node.gpus[kind]
                gpus, node.gpus[kind] = free[: task.gpu], free[task.gpu :]
            node.cpu -= task.cpu
            node.memory -= task.memory_mb
            for numbers in ports.values():
                node.claim_ports(numbers)
            log.append((node, TaskPlacement(task.role, task.index, node.name, gpus, ports), kind))
        self._index(node)

    def _undo(self, log: list[tuple[_Node, TaskPlacement, str | None]], job: JobRequest) -> None:
        tasks = {(task.role, task.index): task for task in job.tasks}
        for node, placement, kind in reversed(log):
            task = tasks[(placement.role, placement.index)]
            self._unindex(node)
            node.cpu += task.cpu
            node.memory += task.memory_mb
            if kind is not None:
                node.gpus[kind] = sorted(node.gpus[kind] + placement.gpus)
            for numbers in placement.ports.values():
                node.release_ports(numbers)
            self._index(node)

    def try_place(self, job: JobRequest, need: _Need, *, dry: bool = False) -> tuple[list[TaskPlacement] | None, int]:
        """All of the job's tasks placed (claimed for this pass, unless `dry`: then only whether they
        would be), or None and how many fitted at once."""
        log: list[tuple[_Node, TaskPlacement, str | None]] = []
        whole = self._first_fit(job.tasks, job.gpu_type, need, most_free_first=False, avoid=job.avoid)
        if whole is not None and dry:
            return [], len(job.tasks)
        if whole is not None:
            self._commit(*whole, log)
            return _in_job_order(job, log), len(job.tasks)
        if len(job.tasks) == 1:
            return None, 0
        # Spread over nodes that reach each other: those elsewhere, else this machine's loopback ones.
        kinds = {node.loopback for node in self.nodes}
        groups: list[bool | None] = [False, True] if len(kinds) > 1 else [None]
        fitted, left_over = 0, None
        for loopback in groups:
            placements, fitted_now = self._spread(job, loopback, dry=dry)
            if placements is not None:
                return placements, len(job.tasks)
            if fitted_now >= fitted:
                fitted, left_over = fitted_now, self.left_over
        self.left_over = left_over
        return None, fitted

    def _spread(
        self, job: JobRequest, loopback: bool | None, *, dry: bool = False
    ) -> tuple[list[TaskPlacement] | None, int]:
        """The job over several nodes, biggest task first, each onto a node the job uses already if
        it fits, else the first node that does (the one with the most free GPUs for a GPU task)."""
        log: list[tuple[_Node, TaskPlacement, str | None]] = []
        job_nodes: list[_Node] = []
        for task in sorted(job.tasks, key=lambda task: (task.gpu, task.memory_mb, task.cpu), reverse=True):
            found = self._on_job_nodes(job_nodes, task, job.gpu_type) or self._first_fit(
                [task],
                job.gpu_type,
                _Need(task.gpu, task.cpu, task.memory_mb, 0, 0, 0),
                most_free_first=task.gpu > 0,
                loopback=loopback,
                avoid=job.avoid,
            )
            if found is None:
                fitted = len(log)
                # Why, on the nodes as the job's placed tasks leave them (before they are undone).
                why = self._why_task_does_not_fit(task, job.gpu_type)
                self.left_over = None if why is None else [why, *self._busy_note(task, exclude=job_nodes)]
                self._undo(log, job)
                return None, fitted
            node, plan = found
            self._commit(node, plan, log)
            if node not in job_nodes:
                job_nodes.append(node)
        placements = _in_job_order(job, log)
        if dry:
            self._undo(log, job)
        return placements, len(job.tasks)

    @staticmethod
    def _on_job_nodes(job_nodes: list[_Node], task: TaskRequest, gpu_type: str | None) -> tuple[_Node, _Plan] | None:
        for node in job_nodes:
            plan = node.plan([task], gpu_type)
            if plan is not None:
                return node, plan
        return None

    def why_not(self, job: JobRequest, need: _Need, fitted: int) -> Reason:
        """Why the job does not fit now, with numbers: the first task that fits no node, else the gang."""
        seen_roles = set()
        for task in job.tasks:
            if task.role in seen_roles:
                continue
            seen_roles.add(task.role)
            reason = self._why_task_does_not_fit(task, job.gpu_type)
            if reason:
                return [reason, *self._busy_note(task)]
        free = sum(node.all_free_gpus(job.gpu_type) for node in self.nodes)
        mixed = len({node.loopback for node in self.nodes}) > 1
        gang = Message.of(
            "reason.gang_loopback" if mixed else "reason.gang",
            tasks=len(job.tasks),
            gpus=counted_gpus(need.gpu, job.gpu_type),
            cpus=Message.of("reason.count.cpus", count=need.cpu),
            memory=memory_text(need.memory_mb),
            fitted=fitted,
            all=len(job.tasks),
            free=counted_gpus(free, job.gpu_type),
        )
        if not self.left_over or len(job.tasks) == 1:
            return [gang]
        why, *busy = self.left_over
        return [gang, Message.of("reason.left_over", why=why), *busy]

    def _busy_note(self, task: TaskRequest, exclude: Iterable[_Node] = ()) -> Reason:
        """`busy: other jobs' tasks hold a, b`: the nodes that would hold the task when idle but
        whose GPUs, CPUs or memory other jobs' tasks hold now (the job's own nodes left out)."""
        skip = set(exclude)
        busy = []
        for node in self.nodes:
            wants = [
                (task.gpu, node.all_free_gpus(None), node.capacity.gpu),
                (task.cpu, node.cpu, node.capacity.cpu),
                (task.memory_mb, node.memory, node.capacity.memory_mb),
            ]
            short = [capacity for need, free, capacity in wants if need > free]
            if node in skip or not short or any(need > capacity for need, _, capacity in wants):
                continue
            if UNKNOWN_TOTAL not in short:  # (a total nobody told us: what holds it is unknown too)
                busy.append(node.name)
        if not busy:
            return []
        if len(busy) > 5:
            return [Message.of("reason.busy_more", nodes=busy[:5], more=len(busy) - 5)]
        return [Message.of("reason.busy", nodes=busy)]

    def _why_task_does_not_fit(self, task: TaskRequest, gpu_type: str | None) -> Message | None:
        room = self.nodes
        if task.gpu:
            most, best_node = self._most_free_gpus(gpu_type)
            if most < task.gpu:
                if best_node and most:
                    return Message.of(
                        "reason.largest_free.gpu_on",
                        gpus=counted_gpus(task.gpu, gpu_type),
                        most=most,
                        node=best_node.name,
                    )
                return Message.of("reason.largest_free.gpu", gpus=counted_gpus(task.gpu, gpu_type), most=most)
            room = list(self._candidates(task.gpu, gpu_type, most_free_first=True))
        among = {"gpus": counted_gpus(task.gpu, gpu_type)} if task.gpu else {}
        best = max(room, key=lambda node: node.cpu)
        if best.cpu < task.cpu:
            largest = "reason.largest_free.cpu_among" if among else "reason.largest_free.cpu"
            return Message.of(largest, need=task.cpu, most=best.cpu, node=best.name, **among)
        room = [node for node in room if node.cpu >= task.cpu]
        best = max(room, key=lambda node: node.memory)
        if best.memory < task.memory_mb:
            memory = "reason.largest_free.memory_among" if among else "reason.largest_free.memory"
            return Message.of(
                memory, need=memory_text(task.memory_mb), most=memory_text(best.memory), node=best.name, **among
            )
        room = [node for node in room if node.memory >= task.memory_mb]
        if any(node.plan([task], gpu_type) is not None for node in room):
            return None
        return _ports_refusal(task, len(room))


def _ports_refusal(task: TaskRequest, nodes_with_room: int) -> Message:
    fixed = [
        f'{request.begin_at}-{request.begin_at + request.count - 1} ("{request.label}")'
        if request.count > 1
        else f'{request.begin_at} ("{request.label}")'
        for request in task.ports
        if request.begin_at
    ]
    wanted = sum(request.count for request in task.ports if not request.begin_at)
    if fixed and wanted:
        return Message.of("reason.ports_taken.both", ports=fixed, count=wanted, nodes=nodes_with_room)
    if fixed:
        return Message.of("reason.ports_taken.fixed", ports=fixed, nodes=nodes_with_room)
    return Message.of("reason.ports_taken.free", count=wanted, nodes=nodes_with_room)


def _in_job_order(job: JobRequest, log: list[tuple[_Node, TaskPlacement, str | None]]) -> list[TaskPlacement]:
    by_task = {(placement.role, placement.index): placement for _, placement, _ in log}
    return [by_task[(task.role, task.index)] for task in job.tasks]
