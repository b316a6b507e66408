"""The job page's plot data, polled while the job runs."""

from __future__ import annotations

from django.http import Http404, HttpRequest, JsonResponse
from django.utils.translation import gettext as _
from django.views.decorators.http import require_GET

from jobs import actions
from jobs.models import Job
from jobs.usage import job_usage


@require_GET
def usage_json(request: HttpRequest, full_name: str) -> JsonResponse:
    """`?since=<epoch s>` gives only newer samples (the page appends them)."""
    try:
        job = actions.get_job_summary_for(request.user, full_name)
    except Job.DoesNotExist as error:
        raise Http404(_("No such job.")) from error
    since = request.GET.get("since", "0")
    return JsonResponse(job_usage(job, int(since) if since.isdigit() else 0))
