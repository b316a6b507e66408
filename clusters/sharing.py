"""Sharing a VC between its users (pure): each user's recent usage for fair share, and when each
waiting job is expected to start.

Fair share (Slurm's decayed usage): a task that held `amount` GPUs (or CPUs, in a VC without
GPUs) from `start` to `end` counts amount x hours, each moment's share halved for every half-life
since it: usage = sum of amount x H/ln 2 x (2^-(now-end)/H - 2^-(now-start)/H) / 3600. A VC that
orders by fair share takes the users with the least usage first (clusters.placement).

Expected starts (Slurm's `squeue --start`): from the time limits of what runs, each waiting job in
its queue's order is given the first moment its VC's quota and the cluster both have room for it,
counting the jobs ahead of it as starting at their own expected starts and running for their
limits. A job that holds resources without a limit makes every job that needs them "unknown".
Node packing is not modelled: it is an estimate, as Slurm's is.
"""

from __future__ import annotations

import heapq
import itertools
import math
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass

SECONDS_PER_HOUR = 3600.0


@dataclass(frozen=True)
class Held:
    """Something held over a span: `amount` units by `user` from `start` to `end` (epoch seconds;
    end None: still held now)."""

    user: str
    amount: float
    start: float
    end: float | None = None


def decayed_usage(spans: Iterable[Held], now: float, half_life_s: float) -> dict[str, float]:
    """Each user's usage in unit-hours, decayed with the half-life (Slurm's PriorityDecayHalfLife)."""
    usage: dict[str, float] = defaultdict(float)
    scale = half_life_s / math.log(2) / SECONDS_PER_HOUR
    for span in spans:
        end = now if span.end is None else min(span.end, now)
        start = min(span.start, end)
        if span.amount <= 0 or end <= start:
            continue
        usage[span.user] += (
            span.amount * scale * (2 ** (-(now - end) / half_life_s) - 2 ** (-(now - start) / half_life_s))
        )
    return dict(usage)


Amounts = tuple[int, int, int]  # GPUs, CPUs, memory MB


@dataclass(frozen=True)
class Running:
    """A running job's resources and when its limit ends it (None: no limit)."""

    need: Amounts
    ends_at: float | None
    vc: str  # its VC (a job of the VC being estimated counts against its quota; every job in the cluster)


@dataclass(frozen=True)
class Queued:
    key: int
    need: Amounts
    limit_s: float | None  # its time limit (None: none, so it holds what it takes for good)


# Expected starts are worked out for this many jobs at the head of each VC's queue; later ones are
# "unknown" (Slurm's backfill also looks only so deep: bf_max_job_test). Keeps a pass's cost bounded.
ESTIMATED_DEPTH = 100


def _fits(used: list[int], need: Amounts, limit: Amounts) -> bool:
    return all(used[i] + need[i] <= limit[i] for i in range(3))


class _Sweep:
    """What the VC and the cluster hold at the sweep's moment, and a heap of when each holding
    with a limit ends (held with no limit: for good)."""

    def __init__(self, vc: str, vc_limit: Amounts, cluster_limit: Amounts) -> None:
        self.vc = vc
        self.limits = (vc_limit, cluster_limit)
        self.in_vc, self.everywhere = [0, 0, 0], [0, 0, 0]
        self.ends: list[tuple[float, int, Amounts, bool]] = []  # (end, tie-breaker, amounts, in the VC)
        self.order = itertools.count()

    def hold_all(self, running: list[Running]) -> None:
        """What runs now: the totals, and one heap of the ends built at once."""
        for i in range(3):
            self.everywhere[i] += sum(job.need[i] for job in running)
            self.in_vc[i] += sum(job.need[i] for job in running if job.vc == self.vc)
        self.ends += [
            (job.ends_at, next(self.order), job.need, job.vc == self.vc) for job in running if job.ends_at is not None
        ]
        heapq.heapify(self.ends)

    def hold(self, need: Amounts, ends_at: float | None, mine: bool) -> None:
        for i in range(3):
            self.everywhere[i] += need[i]
            if mine:
                self.in_vc[i] += need[i]
        if ends_at is not None:
            heapq.heappush(self.ends, (ends_at, next(self.order), need, mine))

    def release_next(self) -> float | None:
        """Free every holding that ends at the next end: that moment, or None when none is left."""
        if not self.ends:
            return None
        moment = self.ends[0][0]
        while self.ends and self.ends[0][0] == moment:
            _, _, amounts, mine = heapq.heappop(self.ends)
            for i in range(3):
                self.everywhere[i] -= amounts[i]
                if mine:
                    self.in_vc[i] -= amounts[i]
        return moment

    def room_for(self, need: Amounts) -> bool:
        return _fits(self.in_vc, need, self.limits[0]) and _fits(self.everywhere, need, self.limits[1])

    def never(self, need: Amounts) -> bool:
        return not (_fits([0, 0, 0], need, self.limits[0]) and _fits([0, 0, 0], need, self.limits[1]))


def expected_starts(
    vc: str, queue: list[Queued], running: list[Running], vc_limit: Amounts, cluster_limit: Amounts, now: float
) -> dict[int, float | None]:
    """When each job of VC `vc`'s queue (in its order) is expected to start, epoch seconds; None
    when unknown. A waiting job waits for something to end: its start is one of the moments a
    running job (or one ahead of it) reaches its limit, after `now` and not before the job ahead.
    One sweep forward in time (the queue is strict): O((running + queue) log running)."""
    sweep = _Sweep(vc, vc_limit, cluster_limit)
    sweep.hold_all(running)
    starts: dict[int, float | None] = {}
    moment: float | None = now
    for depth, job in enumerate(queue):
        if moment is None or depth >= ESTIMATED_DEPTH or sweep.never(job.need):
            moment = None  # (nothing behind an unknown start is known)
            starts[job.key] = None
            continue
        if moment <= now:  # (it waits although it may fit now: it waits for something to end)
            moment = sweep.release_next()
        while moment is not None and not sweep.room_for(job.need):
            moment = sweep.release_next()
        starts[job.key] = moment
        if moment is not None:
            sweep.hold(job.need, moment + job.limit_s if job.limit_s is not None else None, True)
    return starts
