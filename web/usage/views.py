"""The job page's plot data, polled while the job runs; the Usage page and its CSV."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta
from typing import Any

from django.http import Http404, HttpRequest, HttpResponse, JsonResponse, StreamingHttpResponse
from django.shortcuts import render
from django.utils import timezone
from django.utils.translation import gettext
from django.utils.translation import gettext as _
from django.views.decorators.http import require_GET

from accounts.permissions import is_admin
from clusters.models import Gpu
from jobs import actions
from jobs.models import Job
from jobs.usage import job_usage
from scheduling.models import UsageDay
from scheduling.usage_report import rows_for, usage_report
from web.csv_export import csv_lines, in_pages


@require_GET
def usage_json(request: HttpRequest, full_name: str) -> JsonResponse:
    """`?since=<epoch s>` gives only newer samples (the page appends them)."""
    try:
        job = actions.get_job_summary_for(request.user, full_name)
    except Job.DoesNotExist as error:
        raise Http404(_("No such job.")) from error
    since = request.GET.get("since", "0")
    return JsonResponse(job_usage(job, int(since) if since.isdigit() else 0))


# ---- the Usage page: who used what over a range of days (scheduling/usage_report.py) ----------
DEFAULT_DAYS = 30
MAX_DAYS = 3660


def usage_range(query: Any, labels: dict[str, str] | None = None) -> tuple[date, date, list[str]]:
    """`from` and `to` (YYYY-MM-DD, both included; default the last 30 days) and what was wrong,
    each naming its field (`labels`: the page's words for them; the API's are its parameters)."""
    names = labels or {"from": "from", "to": "to"}
    errors: list[str] = []
    today = timezone.now().astimezone(UTC).date()
    until = _day(query.get("to"), today, names["to"], errors)
    since = _day(query.get("from"), until - timedelta(days=DEFAULT_DAYS - 1), names["from"], errors)
    if since > until:
        errors.append(gettext("%(from)s: must not be after %(to)s") % names)
        since = until
    if (until - since).days >= MAX_DAYS:
        errors.append(gettext("%(from)s: at most %(days)s days at once") % {**names, "days": MAX_DAYS})
        since = until - timedelta(days=MAX_DAYS - 1)
    return since, until, errors


def _day(text: str | None, default: date, name: str, errors: list[str]) -> date:
    if not text:
        return default
    try:
        return date.fromisoformat(text)
    except ValueError:
        errors.append(gettext("%(field)s: must be a date like 2026-11-01") % {"field": name})
        return default


@require_GET
def usage_page(request: HttpRequest) -> HttpResponse:
    since, until, errors = usage_range(request.GET, {"from": gettext("From"), "to": gettext("To")})
    admin = is_admin(request.user)
    report = usage_report(request.user, admin, since, until)
    context = {
        "report": report,
        "errors": errors,
        "admin": admin,
        "chart": usage_chart(report.days, since, until),
        # No GPU chart on a cluster without GPUs, unless the range still holds GPU-hours.
        "gpu_chart": Gpu.objects.exists() or report.totals["gpu_hours"] > 0,
        "query": request.GET.urlencode(),
    }
    return render(request, "usage/report.html", context, status=400 if errors else 200)


def usage_chart(days: list[dict[str, Any]], since: date, until: date) -> dict[str, Any]:
    """Every day of the range (a day without usage at 0), and the range itself: a chart of one day
    with usage would otherwise be drawn on an axis of years."""
    by_day = {day["name"]: day for day in days}
    shown = [since + timedelta(days=n) for n in range((until - since).days + 1)]
    rows = [by_day.get(day.isoformat(), {}) for day in shown]
    start = datetime(since.year, since.month, since.day, tzinfo=UTC)
    return {
        "t": [int((start + timedelta(days=n)).timestamp()) for n in range(len(shown))],
        "gpu": [row.get("gpu_hours", 0) for row in rows],
        "gpu_used": [row.get("gpu_used_hours") for row in rows],
        "cpu": [row.get("cpu_hours", 0) for row in rows],
        "range": [int(start.timestamp()), int((start + timedelta(days=len(shown))).timestamp())],
    }


CSV_COLUMNS = (
    "day",
    "job",
    "user",
    "virtualCluster",
    "gpuType",
    "gpuHours",
    "gpuUsedHours",
    "cpuHours",
    "cpuUsedHours",
    "memoryGbHours",
)


@require_GET
def usage_csv(request: HttpRequest) -> HttpResponse | StreamingHttpResponse:
    """Every rollup row of the range (a job's day), as the page adds them up."""
    since, until, errors = usage_range(request.GET)
    if errors:
        return HttpResponse("\n".join(errors), status=400, content_type="text/plain; charset=utf-8")
    rows = (
        rows_for(request.user, is_admin(request.user), since, until).select_related("user").order_by("day", "job_name")
    )
    response = StreamingHttpResponse(
        csv_lines(list(CSV_COLUMNS), (_csv_row(row) for row in in_pages(rows, 2000))),
        content_type="text/csv; charset=utf-8",
    )
    response["Content-Disposition"] = f'attachment; filename="usage-{since}-{until}.csv"'
    return response


def _csv_row(row: UsageDay) -> list[Any]:
    def hours(seconds: int | None, per: float = 1) -> Any:
        return "" if seconds is None else round(seconds / 3600 / per, 3)

    return [
        row.day.isoformat(),
        row.job_name,
        row.user.get_username(),
        row.vc_name,
        row.gpu_type,
        hours(row.gpu_seconds),
        hours(row.gpu_used_seconds),
        hours(row.cpu_seconds),
        hours(row.cpu_used_seconds),
        hours(row.memory_mb_seconds, 1024),
    ]
