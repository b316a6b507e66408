"""`/api/v2/sweeps`: the portal's sweeps (`extras.sweep`; submitted with `POST /api/v2/jobs` like
any config): list, one sweep with its runs, stop all, start the failed ones again."""

from __future__ import annotations

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from jobs import sweeps
from jobs.models import Sweep
from web.api import texts
from web.api.errors import ApiError
from web.api.views.jobs_v2 import accepted

SWEEP = OpenApiParameter("full_name", str, OpenApiParameter.PATH, description="`<user>~<sweep>`")


def found(request: Request, full_name: str) -> Sweep:
    try:
        return sweeps.find_sweep(request.user, full_name)
    except Sweep.DoesNotExist as error:
        raise ApiError(404, "NoSweepError", texts.NO_SWEEP(sweep=full_name)) from error


class SweepsView(APIView):
    @extend_schema(operation_id="v2_sweeps_list", responses={200: OpenApiTypes.OBJECT})
    def get(self, request: Request) -> Response:
        """The sweeps you may see (yours; an admin's: everyone's), newest first."""
        return Response([sweeps.summary(sweep) for sweep in sweeps.visible_sweeps(request.user)[:500]])


class SweepView(APIView):
    @extend_schema(parameters=[SWEEP], responses={200: OpenApiTypes.OBJECT})
    def get(self, request: Request, full_name: str) -> Response:
        """The sweep and every run: its values, state, duration and GPU-hours."""
        sweep = found(request, full_name)
        return Response({**sweeps.summary(sweep), "runList": sweeps.run_rows(sweep)})


class SweepStopView(APIView):
    @extend_schema(parameters=[SWEEP], request=None, responses={202: OpenApiTypes.OBJECT})
    def post(self, request: Request, full_name: str) -> Response:
        """Stop every run that has not finished."""
        stopped = sweeps.stop_sweep(found(request, full_name), request.user)
        return accepted(f"Stopping {stopped} runs of sweep {full_name}.")


class SweepResubmitView(APIView):
    @extend_schema(parameters=[SWEEP], request=None, responses={202: OpenApiTypes.OBJECT})
    def post(self, request: Request, full_name: str) -> Response:
        """Start again every run that failed or was stopped."""
        again = sweeps.resubmit_failed(found(request, full_name), request.user)
        return accepted(f"Started {len(again)} failed runs of sweep {full_name} again.")
