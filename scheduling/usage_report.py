"""Who used what over a range of days, from the daily rollups (scheduling/usage_rollup.py): the
one computation behind the Usage page, its CSV and `GET /api/v2/usage`. An admin sees everyone,
a user themselves. Hours, rounded to 0.1; idle share = 1 - used / allocated GPU time, over the rows
with sampled GPU use (a cluster without nvidia-smi has none: no idle share, not 100 %)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date, timedelta
from typing import Any

from django.contrib.auth import get_user_model
from django.db.models import Count, QuerySet, Sum

from scheduling.models import UsageDay, UsageMonth

HOUR = 3600
TOP = 20


@dataclass(frozen=True)
class UsageReport:
    since: date
    until: date  # inclusive
    totals: dict[str, Any]
    days: list[dict[str, Any]]
    users: list[dict[str, Any]]
    vcs: list[dict[str, Any]]
    gpu_types: list[dict[str, Any]]
    jobs: list[dict[str, Any]]


def rows_for(user: Any, admin: bool, since: date, until: date) -> QuerySet[UsageDay]:
    rows = UsageDay.objects.filter(day__gte=since, day__lte=until)
    return rows if admin else rows.filter(user=user)


def usage_report(user: Any, admin: bool, since: date, until: date) -> UsageReport:
    # The groupings by user, VC and GPU type read whole months from UsageMonth and only the days
    # around them from UsageDay; jobs, days and the totals read UsageDay through its covering index
    # (bench/usage.py).
    rows = rows_for(user, admin, since, until)
    parts = _parts(user, admin, since, until)
    users = _summed(parts, "user_id")[:TOP]
    jobs = _top(rows.filter(job__isnull=False), "job_id")
    user_names = dict(get_user_model().objects.filter(pk__in=[r["name"] for r in users]).values_list("pk", "username"))
    job_names = dict(
        UsageDay.objects.filter(job_id__in=[r["job_id"] for r in jobs]).values_list("job_id", "job_name").distinct()
    )
    return UsageReport(
        since=since,
        until=until,
        totals=_shown(rows.aggregate(**_sum_fields(), jobs=Count("job_id", distinct=True))),
        days=[_shown(r, "day") for r in _grouped(rows, "day").order_by("day")],
        users=[_shown({**r, "name": user_names.get(r["name"], "")}) for r in users],
        vcs=[_shown(r) for r in _summed(parts, "vc_name")],
        gpu_types=[_shown(r) for r in _summed(parts, "gpu_type") if r.get("gpu")],
        jobs=[_shown({**r, "name": job_names.get(r["job_id"], "")}, "job_id") for r in jobs],
    )


def _parts(user: Any, admin: bool, since: date, until: date) -> list[QuerySet[Any]]:
    """The range as querysets to add up: its whole months in UsageMonth, the days before and after
    them in UsageDay (or only days, for a range within a month)."""
    first_month = since if since.day == 1 else (since.replace(day=1) + timedelta(days=32)).replace(day=1)
    after_months = (until + timedelta(days=1)).replace(day=1)  # the first day of no whole month
    if first_month >= after_months:
        return [rows_for(user, admin, since, until)]
    months = UsageMonth.objects.filter(month__gte=first_month, month__lt=after_months)
    return [
        months if admin else months.filter(user=user),
        rows_for(user, admin, since, first_month - timedelta(days=1)),
        rows_for(user, admin, after_months, until),
    ]


def _summed(parts: list[QuerySet[Any]], key: str) -> list[dict[str, Any]]:
    """Each part grouped by `key` in SQL, the parts added up here (a sum stays None where every
    part's is None), biggest first, the key as `name`."""
    added: dict[Any, dict[str, Any]] = {}
    for part in parts:
        for group in part.values(key).annotate(**_sum_fields()):
            into = added.setdefault(group[key], {"name": group[key]})
            for field in ("gpu", "gpu_used", "cpu", "cpu_used", "memory"):
                value = group[field]
                into[field] = into.get(field) if value is None else (into.get(field) or 0) + value
    return sorted(added.values(), key=lambda r: (-(r.get("gpu") or 0), -(r.get("cpu") or 0), str(r["name"])))


def _top(rows: QuerySet[UsageDay], key: str) -> list[dict[str, Any]]:
    return list(_grouped(rows, key).order_by("-gpu", "-cpu")[:TOP])


def _sum_fields() -> dict[str, Any]:
    return {
        "gpu": Sum("gpu_seconds"),
        "gpu_used": Sum("gpu_used_seconds"),
        "cpu": Sum("cpu_seconds"),
        "cpu_used": Sum("cpu_used_seconds"),
        "memory": Sum("memory_mb_seconds"),
    }


def _grouped(rows: QuerySet[UsageDay], key: str) -> Any:
    return rows.values(key).annotate(**_sum_fields())


def _shown(row: dict[str, Any], key: str = "") -> dict[str, Any]:
    """Seconds as hours (memory as GB-hours) and the idle share, with the group's key as `name`."""
    shown = {k: v for k, v in row.items() if k not in ("gpu", "gpu_used", "cpu", "cpu_used", "memory", key)}
    if key and "name" not in shown:
        shown["name"] = row[key].isoformat() if isinstance(row[key], date) else row[key]
    gpu, used = row.get("gpu") or 0, row.get("gpu_used")
    shown.update(
        gpu_hours=round(gpu / HOUR, 1),
        gpu_used_hours=None if used is None else round(used / HOUR, 1),
        idle_percent=None if used is None or not gpu else max(0, round(100 - 100 * used / gpu)),
        cpu_hours=round((row.get("cpu") or 0) / HOUR, 1),
        cpu_used_hours=None if row.get("cpu_used") is None else round(row["cpu_used"] / HOUR, 1),
        memory_gb_hours=round((row.get("memory") or 0) / 1024 / HOUR, 1),
    )
    return shown
