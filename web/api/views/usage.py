"""`GET /api/v2/usage?from=YYYY-MM-DD&to=YYYY-MM-DD`: who used what over those days (the Usage
page's numbers, scheduling/usage_report.py): yours, or an admin's: everyone's."""

from __future__ import annotations

from typing import Any

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from accounts.permissions import is_admin
from catalogue import Message
from scheduling.usage_report import usage_report
from web.api.errors import ApiError
from web.usage.views import usage_range

CAMEL = {
    "gpu_hours": "gpuHours",
    "gpu_used_hours": "gpuUsedHours",
    "idle_percent": "idlePercent",
    "cpu_hours": "cpuHours",
    "cpu_used_hours": "cpuUsedHours",
    "memory_gb_hours": "memoryGbHours",
}


def _row(row: dict[str, Any]) -> dict[str, Any]:
    return {CAMEL.get(key, key): value for key, value in row.items()}


class UsageView(APIView):
    @extend_schema(
        operation_id="v2_usage",
        parameters=[
            OpenApiParameter("from", str, description="first day, YYYY-MM-DD (default: 29 days before `to`)"),
            OpenApiParameter("to", str, description="last day, YYYY-MM-DD (default: today, UTC)"),
        ],
        responses={200: OpenApiTypes.OBJECT},
    )
    def get(self, request: Request) -> Response:
        """GPU, CPU and memory hours held and used per day, user (admins), VC, GPU type and job."""
        since, until, errors = usage_range(request.query_params)
        if errors:
            raise ApiError(400, "InvalidParametersError", Message.of("api.usage.range", said=errors))
        report = usage_report(request.user, is_admin(request.user), since, until)
        return Response(
            {
                "from": since.isoformat(),
                "to": until.isoformat(),
                "totals": _row(report.totals),
                "days": [_row(r) for r in report.days],
                "users": [_row(r) for r in report.users],
                "virtualClusters": [_row(r) for r in report.vcs],
                "gpuTypes": [_row(r) for r in report.gpu_types],
                "jobs": [_row(r) for r in report.jobs],
            }
        )
