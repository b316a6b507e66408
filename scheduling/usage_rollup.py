"""Daily usage rollups: for each day (UTC) and job, the GPU, CPU and memory time its tasks held
(each run's overlap with the day x what it was allocated: its GPUs, its role's cpu and memoryMB)
and what the samples say it used (utilisation x the sample's period). Task runs are the TaskAttempt
rows (ended attempts) and the Task rows of attempts running now, each run once, retries included.
Written by the sampler: each period the jobs whose runs ended since its last pass (roll_up_ended:
a job's usage shows within one sampler period of its end), and with its hourly round today and
yesterday whole (running tasks' time so far, late samples); and by `manage.py rollupusage --days N`."""

from __future__ import annotations

import math
import zlib
from collections import defaultdict
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, time, timedelta
from typing import cast

from django.conf import settings
from django.db import transaction
from django.db.models import F, Q, Sum
from django.utils import timezone

from clusters.models import Gpu
from jobs.models import Job, Task, TaskAttempt, TaskSample
from jobs.protocol.spec import gpu_type
from jobs.usage import RUN_IN_PROGRESS
from scheduling.models import SUMMED, UsageDay, UsageMonth


@dataclass
class Held:
    gpu: float = 0.0
    cpu: float = 0.0
    memory: float = 0.0
    gpu_used: float | None = None
    cpu_used: float | None = None
    types: set[str] = field(default_factory=set)


def day_bounds(day: date) -> tuple[datetime, datetime]:
    start = datetime.combine(day, time.min, tzinfo=UTC)
    return start, start + timedelta(days=1)


def roll_up(day: date, now: datetime | None = None, job_ids: set[int] | None = None) -> int:
    """Replace the day's rows (only those of `job_ids` when given); returns how many jobs ran that
    day (of those)."""
    now = now or timezone.now()
    start, end = day_bounds(day)
    held: dict[int, Held] = defaultdict(Held)
    overlapping = Q(started_at__lt=end, started_at__isnull=False) & (
        Q(finished_at__isnull=True) | Q(finished_at__gt=start)
    )
    if job_ids is not None:
        overlapping &= Q(job_id__in=job_ids)
    runs = [
        *Task.objects.filter(RUN_IN_PROGRESS, overlapping).values(
            "job_id", "role", "gpus", "started_at", "finished_at", node_name=F("node__name")
        ),
        *TaskAttempt.objects.filter(overlapping).values(
            "job_id", "role", "gpus", "node_name", "started_at", "finished_at"
        ),
    ]
    jobs = {
        job.pk: job
        for job in Job.objects.filter(pk__in={run["job_id"] for run in runs}).select_related("owner", "virtual_cluster")
    }
    types = _gpu_types({run["node_name"] for run in runs if run["gpus"]})
    for run in runs:
        job = jobs[run["job_id"]]
        began = cast(datetime, run["started_at"])  # (the filter leaves out runs not started)
        seconds = (min(run["finished_at"] or now, end, now) - max(began, start)).total_seconds()
        if seconds <= 0:
            continue
        resources = job.spec["taskRoles"].get(run["role"], {}).get("resourcePerInstance", {})
        row = held[job.pk]
        row.gpu += seconds * len(run["gpus"] or [])
        row.cpu += seconds * float(resources.get("cpu") or 0)
        row.memory += seconds * float(resources.get("memoryMB") or 0)
        node = run["node_name"]
        row.types |= {types[node, i] for i in run["gpus"] or [] if (node, i) in types}
    _add_samples(held, start, end, job_ids)
    rows = [_usage_row(day, jobs[job_id], row) for job_id, row in held.items() if row.gpu or row.cpu]
    replaced = UsageDay.objects.filter(day=day)
    users = None  # (every user's month; only those whose rows change when some jobs' are replaced)
    if job_ids is not None:
        replaced = replaced.filter(job_id__in=job_ids)
        users = {row.user_id for row in rows} | set(replaced.values_list("user_id", flat=True))
    with transaction.atomic():
        replaced.delete()
        UsageDay.objects.bulk_create(rows, batch_size=1000)
        roll_up_month(day, users)
    return len(rows)


def _usage_row(day: date, job: Job, row: Held) -> UsageDay:
    draw = rounding_draw(job.pk, day)
    return UsageDay(
        day=day,
        job_id=job.pk,
        job_name=job.full_name,
        user_id=job.owner_id,
        vc_name=job.virtual_cluster.name,
        gpu_type=gpu_type(job.spec) or ",".join(sorted(row.types)),
        gpu_seconds=whole(row.gpu, draw),
        gpu_used_seconds=None if row.gpu_used is None else whole(row.gpu_used, draw),
        cpu_seconds=whole(row.cpu, draw),
        cpu_used_seconds=None if row.cpu_used is None else whole(row.cpu_used, draw),
        memory_mb_seconds=whole(row.memory, draw),
    )


def rounding_draw(job_id: int, day: date) -> float:
    """A fixed number in [0, 1) for a job's day: the same each time the day is rolled up."""
    return zlib.crc32(f"{job_id}:{day}".encode()) / 2**32


def whole(seconds: float, draw: float) -> int:
    """Whole seconds, rounded up with the chance of the fraction (stochastic rounding, by the row's
    fixed draw): a row is off by under a second, and sums keep their fractions. Plain rounding
    drops the same fraction from every short run alike (200 runs of `sleep 2`..`sleep 11`, each
    ~0.3 s longer: 3 % of their time, bench/usage_runs.py)."""
    return math.floor(seconds + draw)


def roll_up_month(day: date, users: set[int] | None = None) -> None:
    """Rewrite the month of `day` in `UsageMonth` from its daily rows (only `users`' when given)."""
    first = day.replace(day=1)
    following = (first + timedelta(days=32)).replace(day=1)
    days = UsageDay.objects.filter(day__gte=first, day__lt=following)
    months = UsageMonth.objects.filter(month=first)
    if users is not None:
        days, months = days.filter(user_id__in=users), months.filter(user_id__in=users)
    groups = days.values("user_id", "vc_name", "gpu_type").annotate(**{field: Sum(field) for field in SUMMED})
    with transaction.atomic():
        months.delete()
        UsageMonth.objects.bulk_create([UsageMonth(month=first, **group) for group in groups], batch_size=1000)


def _gpu_types(node_names: set[str]) -> dict[tuple[str, int], str]:
    return {
        (node, index): name
        for node, index, name in Gpu.objects.filter(node__name__in=node_names).values_list(
            "node__name", "index", "gpu_type__name"
        )
    }


def _add_samples(held: dict[int, Held], start: datetime, end: datetime, job_ids: set[int] | None) -> None:
    """Sampled use: each sample stands for its period (a raw one for PAI_SAMPLE_SECONDS)."""
    samples = TaskSample.objects.filter(at__gte=int(start.timestamp()), at__lt=int(end.timestamp()))
    if job_ids is not None:  # (by their tasks' ids: the (task, at) index, not a day's samples)
        samples = samples.filter(task_id__in=Task.objects.filter(job_id__in=job_ids).values("pk"))
    for job_id, period, cpu_milli, gpus in samples.values_list("task__job_id", "period", "cpu_milli", "gpus").iterator(
        chunk_size=5000
    ):
        row = held.get(job_id)
        if row is None:
            continue
        seconds = period or settings.PAI_SAMPLE_SECONDS
        row.cpu_used = (row.cpu_used or 0.0) + cpu_milli / 1000 * seconds
        if gpus:
            row.gpu_used = (row.gpu_used or 0.0) + sum((g[1] or 0) for g in gpus) / 100 * seconds


def roll_up_recent(now: datetime | None = None) -> None:
    now = now or timezone.now()
    today = now.astimezone(UTC).date()
    for day in (today - timedelta(days=1), today):
        roll_up(day, now)


def last_ended_run() -> int:
    """Where roll_up_ended starts from: the id of the latest ended attempt (0: none yet)."""
    return TaskAttempt.objects.order_by("-pk").values_list("pk", flat=True).first() or 0


def roll_up_ended(after: int, now: datetime | None = None) -> int:
    """Roll up again the jobs whose runs ended since the last pass (TaskAttempt rows recorded after
    the id `after`: by when the portal recorded them, whatever clock their times came from), on
    each day those runs touched; returns the id to start from next time. Nothing ended: one
    query on the primary key."""
    ended = TaskAttempt.objects.filter(pk__gt=after).values_list("pk", "job_id", "started_at", "finished_at")
    days: dict[date, set[int]] = defaultdict(set)
    last = after
    for pk, job_id, started, finished in ended:
        last = max(last, pk)
        if started is None:
            continue  # (a start that failed: it held nothing)
        day, until = started.astimezone(UTC).date(), (finished or started).astimezone(UTC).date()
        while day <= until:
            days[day].add(job_id)
            day += timedelta(days=1)
    now = now or timezone.now()
    for day, job_ids in sorted(days.items()):
        roll_up(day, now, job_ids)
    return last
