"""The weekly report (OpenPAI's alert manager mailed a weekly GPU-utilisation report per user):
on Mondays (UTC), each user who ran something last week gets their GPU-hours held and used, the
idle share and their failed jobs; admins get the whole cluster's, with its top users. From the
daily rollups (scheduling/usage_rollup.py); opt-out in the profile (`weekly_report`); each user's
week once (`WeeklyReportSent`, written with the mail into the outbox: jobs/outbox.py sends it,
retries it, and never folds it into a digest), whatever the sampler's restarts; a stalled mail
server never holds the sampler's hourly round. Called by that round."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta
from typing import Any

from django.contrib.auth import get_user_model
from django.db import IntegrityError, transaction
from django.urls import reverse
from django.utils import timezone

from accounts.links import public_url
from accounts.models import NotificationPreference
from accounts.permissions import is_admin
from jobs import outbox
from jobs.models import Job, JobState
from scheduling.models import UsageDay, WeeklyReportSent
from scheduling.usage_report import UsageReport, usage_report


def last_week(now: datetime) -> tuple[date, date]:
    today = now.astimezone(UTC).date()
    monday = today - timedelta(days=today.weekday())
    return monday - timedelta(days=7), monday - timedelta(days=1)


def send_weekly_reports(now: datetime | None = None) -> int:
    """On a Monday: the reports of last week not written yet, into the outbox; how many."""
    now = now or timezone.now()
    if now.astimezone(UTC).weekday() != 0:
        return 0
    since, until = last_week(now)
    opted_out = set(NotificationPreference.objects.filter(weekly_report=False).values_list("user_id", flat=True))
    ran = set(UsageDay.objects.filter(day__gte=since, day__lte=until).values_list("user_id", flat=True))
    done = set(WeeklyReportSent.objects.filter(week=since).values_list("user_id", flat=True))
    sent = 0
    for user in get_user_model().objects.filter(is_active=True).exclude(email="").order_by("id"):
        if user.pk in opted_out or user.pk in done or not (user.pk in ran or is_admin(user)):
            continue
        admin = is_admin(user)
        report = usage_report(user, admin, since, until)
        if admin and not report.totals["gpu_hours"] and not report.totals["cpu_hours"]:
            continue  # (an idle cluster: nothing to say)
        try:
            with transaction.atomic():
                WeeklyReportSent.objects.create(user=user, week=since)
                outbox.mail(user, _subject(since, until, admin), _body(user, report, admin), event=outbox.WEEKLY)
        except IntegrityError:
            continue  # another sampler wrote it
        sent += 1
    return sent


def _subject(since: date, until: date, admin: bool) -> str:
    whose = "the cluster's" if admin else "your"
    return f"[PAI] {whose} usage, {since.isoformat()} to {until.isoformat()}"


def _body(user: Any, report: UsageReport, admin: bool) -> str:
    totals = report.totals
    idle = f"{totals['idle_percent']} %" if totals["idle_percent"] is not None else "not sampled"
    lines = [
        f"{'The cluster' if admin else 'You'} held {totals['gpu_hours']} GPU-hours from {report.since} to "
        f"{report.until}: {totals['gpu_used_hours'] if totals['gpu_used_hours'] is not None else '-'} used, "
        f"idle share {idle}; {totals['cpu_hours']} CPU-hours; {totals['jobs']} jobs.",
    ]
    if admin and report.users:
        lines.append("Top users (GPU-hours held, idle share):")
        lines += [f"  {row['name']}: {row['gpu_hours']}, {_idle(row)}" for row in report.users[:10]]
    if report.jobs:
        lines.append("Jobs that held the most GPU time:")
        lines += [f"  {row['name']}: {row['gpu_hours']} GPU-hours, {_idle(row)} idle" for row in report.jobs[:5]]
    failed = _failed(user, admin, report)
    if failed:
        lines.append(f"Failed jobs ({len(failed)}):")
        lines += [f"  {job.full_name}: exit {job.exit_code} {job.exit_diagnostics[:120]}" for job in failed[:20]]
    lines.append(public_url(f"{reverse('jobs_usage:report')}?from={report.since}&to={report.until}"))
    lines.append(f"No more of these: {public_url(reverse('profile'))} (Notifications).")
    return "\n\n".join(lines) + "\n"


def _idle(row: dict[str, Any]) -> str:
    return f"{row['idle_percent']} %" if row["idle_percent"] is not None else "-"


def _failed(user: Any, admin: bool, report: UsageReport) -> list[Job]:
    start = datetime.combine(report.since, datetime.min.time(), tzinfo=UTC)
    end = start + timedelta(days=7)
    jobs = Job.objects.filter(state=JobState.FAILED, completed_at__gte=start, completed_at__lt=end)
    return list((jobs if admin else jobs.filter(owner=user)).select_related("owner").order_by("-completed_at")[:50])
