"""What the browser notifier (static/portal/notify.js) polls while a portal page is open."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any, cast

from django.http import HttpRequest, JsonResponse
from django.views.decorators.http import require_GET

from accounts.models import NotificationPreference
from jobs.models import FINISHED_JOB_STATES, Job


@require_GET
def ended_jobs(request: HttpRequest) -> JsonResponse:
    """`?since=<epoch s>`: the user's jobs that ended after it (none unless they asked for browser
    notifications in their profile), and `now` for the next poll."""
    now = datetime.now(UTC)
    user = cast(Any, request.user)
    wanted = NotificationPreference.objects.filter(user=user, browser=True).exists()
    since = request.GET.get("since", "")
    jobs: list[dict[str, str]] = []
    if wanted and since.isdigit():
        ended = Job.objects.filter(
            owner=user, state__in=FINISHED_JOB_STATES, completed_at__gt=datetime.fromtimestamp(int(since), UTC)
        ).order_by("completed_at")[:20]
        jobs = [{"name": job.full_name, "state": job.state} for job in ended]
    return JsonResponse({"enabled": wanted, "now": int(now.timestamp()), "jobs": jobs})
