"""Preemption inside a virtual cluster: a pure decision, like clusters.placement (no database).

A waiting job that placement left waiting, first in its VC's queue (the job FIFO makes the
others wait behind), may preempt running jobs of a lower priority that hold its VC's quota:

- the fewest such jobs, then the lowest classes, then the youngest (the least work lost), that
  free enough room for its whole gang (placement's own rules decide that: quota, nodes, GPU
  types, ports);
- whole jobs only: a victim's every task goes (a gang is never preempted in part);
- nothing at all when even every lower job gone would not make it fit (it would only lose work);
- jobs already being ended (in their grace period) count as room coming free: while those
  suffice, no further job is preempted.

A running job is offered as a candidate for the VC whose quota it holds (`RunningJob.vc`): a job
running on quota borrowed from another VC is that VC's candidate, so the owner's jobs take the room
back by the same rule (reclaim): a borrowed job gives way to any job of the VC it borrows from,
whatever its class, and goes before that VC's own lower jobs; whole, and only when that makes the
owner's job fit.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field, replace

from clusters.placement import JobRequest, NodeState, PlacementResult, Resources, VcState, place, queue_order


@dataclass(frozen=True)
class Holding:
    """What one task of a running job holds on its node."""

    node: str
    gpus: dict[int, str]  # GPU index -> type
    cpu: int
    memory_mb: int
    ports: frozenset[int] = frozenset()


@dataclass
class RunningJob:
    key: int  # the Job's primary key
    vc: str  # the VC whose quota it holds
    priority: int
    started: float  # when its attempt launched (epoch seconds): a larger one is younger
    holdings: list[Holding] = field(default_factory=list)
    terminating: bool = False  # being stopped or preempted already: its room is coming free
    borrowed: bool = False  # it runs on `vc`'s idle quota, lent (its own VC is another)


@dataclass(frozen=True)
class Preemption:
    job: int  # the waiting job that needs the room
    vc: str
    victims: tuple[int, ...]  # jobs to preempt now (whole), fewest, borrowed, lowest, youngest
    awaiting: tuple[int, ...] = ()  # jobs already being ended whose room it waits for


def plan_preemptions(
    nodes: list[NodeState],
    vcs: dict[str, VcState],
    jobs: list[JobRequest],
    running: list[RunningJob],
    placed: PlacementResult,
) -> dict[int, Preemption]:
    """For each VC, its first waiting job that placement left waiting and that can fit at all:
    which running jobs it preempts (or waits for), by waiting job. `nodes`/`vcs`/`jobs` as placement
    had them (every request: the placed ones of any VC are looked up there); `placed` is its result
    (what it placed this pass holds its room too)."""
    nodes, vcs = _after(nodes, vcs, jobs, placed)
    by_vc: dict[str, list[RunningJob]] = defaultdict(list)
    for other in running:
        by_vc[other.vc].append(other)
    plans: dict[int, Preemption] = {}
    seen_vcs: set[str] = set()
    for job in sorted(jobs, key=queue_order):
        if job.key in placed.placed or job.key in placed.never_fits or job.vc in seen_vcs or job.vc not in vcs:
            continue
        if [part.code for part in placed.pending.get(job.key, [])[:1]] == ["reason.user_cap"]:
            continue  # its owner's cap holds it, not the VC (the VC's later jobs went on past it)
        seen_vcs.add(job.vc)  # only a VC's first waiting job: the others wait behind it anyway
        plan = choose_victims(nodes, vcs[job.vc], job, by_vc.get(job.vc, []))
        if plan is not None:
            plans[job.key] = plan
    return plans


def choose_victims(
    nodes: list[NodeState], vc: VcState, job: JobRequest, running: list[RunningJob]
) -> Preemption | None:
    """The jobs `job` preempts in its VC, or None when preempting cannot (or need not) help it."""
    ending = [other for other in running if other.terminating]
    candidates = sorted(
        (other for other in running if not other.terminating and (other.borrowed or other.priority < job.priority)),
        key=lambda other: (not other.borrowed, other.priority, -other.started, -other.key),
    )
    awaiting = tuple(other.key for other in ending)
    bound = _Bound(nodes, vc, job, ending)

    def fits(victims: list[RunningJob]) -> bool:
        # (placement is asked only where the freed room could be enough: a cheap count first)
        return bound.may_fit(victims) and _fits(nodes, vc, job, ending + victims)

    if ending and fits([]):
        return Preemption(job.key, job.vc, (), awaiting)
    if not candidates:
        return None
    for single in candidates:  # one job: the lowest, youngest one that is enough
        if fits([single]):
            return Preemption(job.key, job.vc, (single.key,), awaiting)
    chosen: list[RunningJob] = []
    for candidate in candidates:  # else the lowest, youngest first until the gang fits
        chosen.append(candidate)
        if fits(chosen):
            break
    else:
        return None  # even every lower job gone would not make room: preempt nothing
    for candidate in reversed(chosen[:-1]):  # then spare those not needed, the most protected first
        rest = [other for other in chosen if other is not candidate]
        if fits(rest):
            chosen = rest
    return Preemption(job.key, job.vc, tuple(other.key for other in chosen), awaiting)


class _Bound:
    """What the job needs freed before placement could hold it at all: its VC's quota short of it
    (GPUs, CPUs, memory), and the GPUs the nodes lack in all. Victims freeing less cannot make it
    fit (placement would refuse it on the quota, or find too few GPUs), so placement is not asked:
    the victims chosen are the same, at a fraction of the cost (each ask places the job on every node)."""

    def __init__(self, nodes: list[NodeState], vc: VcState, job: JobRequest, ending: list[RunningJob]) -> None:
        tasks = job.tasks
        need = (sum(t.gpu for t in tasks), sum(t.cpu for t in tasks), sum(t.memory_mb for t in tasks))
        limit, used = vc.limit, vc.used
        room = (limit.gpu - used.gpu, limit.cpu - used.cpu, limit.memory_mb - used.memory_mb)
        freed = self._freed(ending)
        self.short = [wanted - left - back for wanted, left, back in zip(need, room, freed, strict=True)]
        self.usable = {state.name for state in nodes if state.schedulable and state.name not in job.avoid}
        free = sum(len(state.gpus_free) for state in nodes if state.name in self.usable)
        self.gpus_short = need[0] - free - self._freed_gpus(ending)

    def may_fit(self, victims: list[RunningJob]) -> bool:
        freed = self._freed(victims)
        if any(short > amount for short, amount in zip(self.short, freed, strict=True)):
            return False
        return self.gpus_short <= self._freed_gpus(victims)

    @staticmethod
    def _freed(jobs: list[RunningJob]) -> list[int]:
        gpu = cpu = memory = 0
        for other in jobs:
            for holding in other.holdings:
                gpu, cpu, memory = gpu + len(holding.gpus), cpu + holding.cpu, memory + holding.memory_mb
        return [gpu, cpu, memory]

    def _freed_gpus(self, jobs: list[RunningJob]) -> int:
        """The GPUs they free on the nodes the job may use."""
        return sum(len(holding.gpus) for other in jobs for holding in other.holdings if holding.node in self.usable)


def _fits(nodes: list[NodeState], vc: VcState, job: JobRequest, freed: list[RunningJob]) -> bool:
    """Would the job be placed with `freed`'s room given back?"""
    by_node: dict[str, list[Holding]] = defaultdict(list)
    gpu = cpu = memory = 0
    for other in freed:
        for holding in other.holdings:
            by_node[holding.node].append(holding)
            gpu, cpu, memory = gpu + len(holding.gpus), cpu + holding.cpu, memory + holding.memory_mb
    states = [_give_back(state, by_node[state.name]) if state.name in by_node else state for state in nodes]
    used = Resources(gpu=vc.used.gpu - gpu, cpu=vc.used.cpu - cpu, memory_mb=vc.used.memory_mb - memory)
    return job.key in place(states, {vc.name: replace(vc, used=used)}, [job]).placed


def _give_back(state: NodeState, holdings: list[Holding]) -> NodeState:
    gpus = dict(state.gpus_free)
    ports = set(state.ports_used)
    cpu, memory = state.cpu_free, state.memory_free_mb
    for holding in holdings:
        gpus.update(holding.gpus)
        ports.difference_update(holding.ports)
        cpu += holding.cpu
        memory += holding.memory_mb
    return replace(state, gpus_free=gpus, ports_used=ports, cpu_free=cpu, memory_free_mb=memory)


def _after(
    nodes: list[NodeState], vcs: dict[str, VcState], jobs: list[JobRequest], placed: PlacementResult
) -> tuple[list[NodeState], dict[str, VcState]]:
    """The cluster once this pass's placements hold their room."""
    if not placed.placed:
        return nodes, vcs
    requests = {job.key: job for job in jobs}
    by_node: dict[str, list[tuple[int, int, list[int], set[int]]]] = defaultdict(list)
    used = {name: [vc.used.gpu, vc.used.cpu, vc.used.memory_mb] for name, vc in vcs.items()}
    for key, placements in placed.placed.items():
        job = requests[key]
        tasks = {(task.role, task.index): task for task in job.tasks}
        for placement in placements:
            task = tasks[(placement.role, placement.index)]
            ports = {port for numbers in placement.ports.values() for port in numbers}
            by_node[placement.node].append((task.cpu, task.memory_mb, placement.gpus, ports))
            charged = placed.borrowed.get(key, job.vc)  # (a borrowing job: the lender's quota)
            if charged in used:
                held = used[charged]
                used[charged] = [held[0] + len(placement.gpus), held[1] + task.cpu, held[2] + task.memory_mb]
    states = []
    for state in nodes:
        taken = by_node.get(state.name)
        if not taken:
            states.append(state)
            continue
        gpus, ports = dict(state.gpus_free), set(state.ports_used)
        cpu, memory = state.cpu_free, state.memory_free_mb
        for task_cpu, task_memory, task_gpus, task_ports in taken:
            for index in task_gpus:
                gpus.pop(index, None)
            ports |= task_ports
            cpu -= task_cpu
            memory -= task_memory
        states.append(replace(state, gpus_free=gpus, ports_used=ports, cpu_free=cpu, memory_free_mb=memory))
    return states, {
        name: replace(vc, used=Resources(gpu=used[name][0], cpu=used[name][1], memory_mb=used[name][2]))
        for name, vc in vcs.items()
    }
