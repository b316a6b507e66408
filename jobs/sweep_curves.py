"""The searched metric's curve of each run of an adaptive search (jobs/sweep_search.py): its first
task's points (the first that reported it), step -> value.

`CurveCache` keeps them from pass to pass in the sampler's "adaptive search" duty. A run's points
are read again only when its MetricSeries says something was written since (the sampler adds
every point it writes to the series' `points`, in the same transaction; a run without a series is
read each time), and then only the points
written since (`at`, the second they were read; the last second again, a later write may share
it): a finished run's curve is read once, a running one's new points each pass. One query for
the series of every run, one for the new points of those that changed.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from django.db.models import Q

from jobs.models import MetricPoint, MetricSeries


@dataclass
class Cached:
    written: int = -1  # the series' `points` when read (-1: read it all again)
    since: int | None = None  # the latest `at` of the points read (None: none read yet)
    task_id: int | None = None
    curve: dict[int, float] = field(default_factory=dict)
    read_at: dict[int, int] = field(default_factory=dict)  # step -> its point's `at`


def read_curves(job_ids: list[int], metric: str) -> CurveCache:
    """Each run's curve read whole, nothing kept (a page's or the API's one look): a cache of
    its own, to ask its `curves` and `read_times`."""
    cache = CurveCache()
    cache.read({job_id: cache.runs.setdefault((job_id, metric), Cached()) for job_id in job_ids}, metric)
    return cache


class CurveCache:
    def __init__(self) -> None:
        self.runs: dict[tuple[int, str], Cached] = {}
        self.touched: set[tuple[int, str]] = set()
        self.points_read = 0  # (what a test or a bench counts)

    def curves(self, job_ids: list[int], metric: str) -> dict[int, dict[int, float]]:
        """Each run's curve (job id -> step -> value; {} for a run that reported none)."""
        written = dict(MetricSeries.objects.filter(job_id__in=job_ids, name=metric).values_list("job_id", "points"))
        stale: dict[int, Cached] = {}
        for job_id in job_ids:
            cached = self.runs.setdefault((job_id, metric), Cached())
            points = written.get(job_id)  # (None: no series, so nothing to trust: read)
            if points is None or cached.written != points:
                if cached.since is None:  # (read from the start)
                    cached.task_id, cached.curve, cached.read_at = None, {}, {}
                stale[job_id] = cached
                cached.written = -1 if points is None else points
        self.touched.update((job_id, metric) for job_id in job_ids)
        if stale:
            self.read(stale, metric)
        return self.known(job_ids, metric)

    def known(self, job_ids: list[int], metric: str) -> dict[int, dict[int, float]]:
        """The curves as last read (`curves` reads what is new first)."""
        return {job_id: self.runs[(job_id, metric)].curve for job_id in job_ids}

    def read_times(self, job_ids: list[int], metric: str) -> dict[int, dict[int, int]]:
        """When each step of the curves as last read was read (job id -> step -> its `at`)."""
        return {job_id: self.runs[(job_id, metric)].read_at for job_id in job_ids}

    def read(self, stale: dict[int, Cached], metric: str) -> None:
        """The points of `stale`'s runs written since each was last read, into their curves."""
        by_since: dict[int | None, list[int]] = {}
        for job_id, cached in stale.items():
            by_since.setdefault(cached.since, []).append(job_id)
        wanted = Q()
        for since, job_ids in by_since.items():
            wanted |= Q(job_id__in=job_ids) if since is None else Q(job_id__in=job_ids, at__gte=since)
        rows = MetricPoint.objects.filter(wanted, name=metric).order_by("job_id", "task_id", "step")
        again = set()
        for job_id, task_id, step, value, at in rows.values_list("job_id", "task_id", "step", "value", "at"):
            self.points_read += 1
            cached = stale[job_id]
            if cached.task_id is None:
                cached.task_id = task_id
            if task_id == cached.task_id:
                cached.curve[step] = value
                cached.read_at[step] = at
                cached.since = at if cached.since is None else max(cached.since, at)
            elif task_id < cached.task_id:  # (a first task that reported later)
                again.add(job_id)
        for job_id in again:  # (all again next time)
            stale[job_id].written, stale[job_id].since = -1, None

    def forget_untouched(self) -> None:
        """Drop the runs no pass asked for since the last call (their search was over, or gone)."""
        self.runs = {key: cached for key, cached in self.runs.items() if key in self.touched}
        self.touched = set()
