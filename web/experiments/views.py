"""A job's training metrics for its page (downsampled, polled while it runs) and as CSV (every
point); jobs/training_metrics.py reads them."""

from __future__ import annotations

from django.http import Http404, HttpRequest, JsonResponse, StreamingHttpResponse
from django.utils.translation import gettext as _
from django.views.decorators.http import require_GET

from jobs import actions
from jobs.models import Job
from jobs.training_metrics import CSV_COLUMNS, PLOT_POINTS, csv_rows, job_metrics
from web.csv_export import csv_lines


def _job(request: HttpRequest, full_name: str) -> Job:
    try:
        return actions.get_job_summary_for(request.user, full_name)
    except Job.DoesNotExist as error:
        raise Http404(_("No such job.")) from error


@require_GET
def metrics_json(request: HttpRequest, full_name: str) -> JsonResponse:
    return JsonResponse(job_metrics(_job(request, full_name), most=PLOT_POINTS))


@require_GET
def metrics_csv(request: HttpRequest, full_name: str) -> StreamingHttpResponse:
    job = _job(request, full_name)
    lines = csv_lines(list(CSV_COLUMNS), csv_rows(job))
    response = StreamingHttpResponse(lines, content_type="text/csv; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="{job.name}-metrics.csv"'
    return response
