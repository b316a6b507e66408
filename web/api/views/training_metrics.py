"""`GET /api/v2/jobs/<user>~<job>/metrics`: a job's training metrics (jobs/training_metrics.py),
every point unless `maxPoints` asks for fewer per series; `name` one metric alone."""

from __future__ import annotations

from drf_spectacular.utils import OpenApiParameter, extend_schema, inline_serializer
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from catalogue import Message
from jobs.training_metrics import job_metrics
from web.api.errors import ApiError
from web.api.views import common

SERIES = inline_serializer(
    "MetricSeries",
    {
        "task": serializers.CharField(help_text="`<role>-<index>`"),
        "name": serializers.CharField(),
        "steps": serializers.ListField(child=serializers.IntegerField()),
        "values": serializers.ListField(child=serializers.FloatField()),
    },
)
METRICS = inline_serializer(
    "JobMetrics",
    {
        "cap": serializers.IntegerField(help_text="The most points the job keeps (PAI_METRICS_MAX_POINTS)."),
        "points": serializers.IntegerField(help_text="Points in this answer before any downsampling."),
        "dropped": serializers.IntegerField(help_text="Points reported past the cap, not kept."),
        "badLines": serializers.IntegerField(help_text="Lines skipped: not a JSON object with a number."),
        "names": serializers.ListField(child=serializers.CharField(), help_text="Every metric the job reported."),
        "series": serializers.ListField(child=SERIES, help_text="Per task and metric, by step."),
    },
)


class JobMetricsView(APIView):
    @extend_schema(
        operation_id="v2_job_metrics",
        parameters=[
            common.JOB_NAME_PARAMETER,
            OpenApiParameter("name", str, description="Only this metric."),
            OpenApiParameter(
                "maxPoints", int, description="At most about this many points per series (each bucket's low and high)."
            ),
        ],
        responses={200: METRICS},
    )
    def get(self, request: Request, full_name: str) -> Response:
        job = common.find_job_summary(request, full_name)
        most = request.query_params.get("maxPoints")
        if most is not None and (not most.isdigit() or int(most) < 2):
            raise ApiError(400, "InvalidParametersError", Message.of("api.metrics.max_points"), "maxPoints")
        return Response(job_metrics(job, most=int(most) if most else None, name=request.query_params.get("name")))
