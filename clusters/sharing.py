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

import bisect
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
    in_vc: bool  # one of the VC's own (counts against its quota; every job counts in the cluster)


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


class _Holdings:
    """What is held in the VC and in the cluster (totals), and when each holding with a limit ends,
    sorted by end."""

    def __init__(self, running: list[Running]) -> None:
        self.vc_total = [0, 0, 0]
        self.all_total = [0, 0, 0]
        self.ends: list[tuple[float, Amounts, bool]] = []
        for job in running:
            self.add(job.need, job.ends_at, job.in_vc)

    def add(self, need: Amounts, ends_at: float | None, in_vc: bool) -> None:
        for i in range(3):
            self.all_total[i] += need[i]
            if in_vc:
                self.vc_total[i] += need[i]
        if ends_at is not None:  # (held with no limit: counted in the totals for good)
            bisect.insort(self.ends, (ends_at, need, in_vc))

    def first_room(self, need: Amounts, after: float, vc: Amounts, cluster: Amounts) -> float | None:
        """The first moment after `after` at which a holding ends and `need` then fits both pools."""
        vc_used, all_used = list(self.vc_total), list(self.all_total)
        ends = self.ends
        for i, (end, amounts, mine) in enumerate(ends):
            for k in range(3):
                all_used[k] -= amounts[k]
                if mine:
                    vc_used[k] -= amounts[k]
            if end <= after or (i + 1 < len(ends) and ends[i + 1][0] == end):
                continue  # (free at this moment only once every holding ending then is counted)
            if _fits(vc_used, need, vc) and _fits(all_used, need, cluster):
                return end
        return None


def expected_starts(
    queue: list[Queued], running: list[Running], vc_limit: Amounts, cluster_limit: Amounts, now: float
) -> dict[int, float | None]:
    """When each job of the VC's queue (in its order) is expected to start, epoch seconds; None
    when unknown. A waiting job waits for something to end: its start is one of the moments a
    running job (or one ahead of it) reaches its limit, after `now` and not before the job ahead."""
    holdings = _Holdings(running)
    starts: dict[int, float | None] = {}
    earliest = now
    unknown = False
    for depth, job in enumerate(queue):
        never = not _fits([0, 0, 0], job.need, vc_limit) or not _fits([0, 0, 0], job.need, cluster_limit)
        start = (
            None
            if unknown or never or depth >= ESTIMATED_DEPTH
            else holdings.first_room(job.need, earliest - 1e-9 if earliest > now else now, vc_limit, cluster_limit)
        )
        starts[job.key] = start
        if start is None:
            unknown = True  # (the queue is strict: nothing behind an unknown start is known)
            continue
        earliest = start
        holdings.add(job.need, start + job.limit_s if job.limit_s is not None else None, True)
    return starts
