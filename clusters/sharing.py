"""Sharing a VC between its users (pure): each user's recent usage for fair share (when each
waiting job is expected to start is placement's plan: clusters.placement).

Fair share (Slurm's decayed usage): a task that held `amount` GPUs (or CPUs, in a VC without
GPUs) from `start` to `end` counts amount x hours, each moment's share halved for every half-life
since it: usage = sum of amount x H/ln 2 x (2^-(now-end)/H - 2^-(now-start)/H) / 3600. A VC that
orders by fair share takes the users with the least usage first (clusters.placement).
"""

from __future__ import annotations

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
