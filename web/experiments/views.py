"""A job's training metrics for its page (downsampled, polled while it runs) and as CSV (every
point); jobs/training_metrics.py reads them."""

from __future__ import annotations

from django.http import HttpRequest, JsonResponse, StreamingHttpResponse
from django.views.decorators.http import require_GET

from jobs.training_metrics import CSV_COLUMNS, PLOT_POINTS, csv_rows, job_metrics
from web.csv_export import csv_lines
from web.job_page import job_or_404


@require_GET
def metrics_json(request: HttpRequest, full_name: str) -> JsonResponse:
    return JsonResponse(job_metrics(job_or_404(request, full_name, summary=True), most=PLOT_POINTS))


@require_GET
def metrics_csv(request: HttpRequest, full_name: str) -> StreamingHttpResponse:
    job = job_or_404(request, full_name, summary=True)
    lines = csv_lines(list(CSV_COLUMNS), csv_rows(job))
    response = StreamingHttpResponse(lines, content_type="text/csv; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="{job.name}-metrics.csv"'
    return response
