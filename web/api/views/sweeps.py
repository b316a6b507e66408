"""`/api/v2/sweeps`: the portal's sweeps (`extras.sweep`; submitted with `POST /api/v2/jobs` like
any config): list, one sweep with its runs, stop all, start the failed ones again."""

from __future__ import annotations

from typing import Any

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema, inline_serializer
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from catalogue import Message
from jobs import sweeps
from jobs.models import Sweep
from jobs.sweep_search import search_state
from web.api.errors import ApiError
from web.api.views.jobs_v2 import accepted

SWEEP = OpenApiParameter("full_name", str, OpenApiParameter.PATH, description="`<user>~<sweep>`")


SEARCH = inline_serializer(
    "SweepSearch",
    {
        "algorithm": serializers.ChoiceField(["tpe", "random", "grid"]),
        "metric": serializers.CharField(),
        "goal": serializers.ChoiceField(["minimize", "maximize"]),
        "trials": serializers.IntegerField(help_text="Runs the search makes in all."),
        "maxConcurrent": serializers.IntegerField(allow_null=True, help_text="Runs at once (null: no cap)."),
        "pruner": serializers.CharField(allow_null=True, help_text="`asha`, `median`, or null (none)."),
        "made": serializers.IntegerField(help_text="Runs made so far."),
        "ended": serializers.BooleanField(help_text="Whether it makes no more runs (all made, or it was ended)."),
        "done": serializers.IntegerField(help_text="Runs that succeeded: complete trials."),
        "running": serializers.IntegerField(help_text="Runs not finished yet."),
        "pruned": serializers.IntegerField(help_text="Runs the pruner stopped."),
        "failed": serializers.IntegerField(help_text="Runs that failed or were stopped by a user."),
        "best": inline_serializer(
            "SweepSearchBest",
            {
                "run": serializers.CharField(help_text="The run's job name."),
                "value": serializers.FloatField(help_text="Its metric's last value."),
                "params": serializers.DictField(help_text="Its values."),
            },
            allow_null=True,
            help_text="The best complete run so far (null: none yet).",
        ),
    },
    allow_null=True,
    help_text="An adaptive search's state (`extras.sweep.search`); null for a grid or random sweep.",
)
SWEEP_ANSWER = inline_serializer(
    "SweepDetail",
    {
        "name": serializers.CharField(),
        "username": serializers.CharField(),
        "kind": serializers.CharField(help_text="`grid`, `random` or `search`."),
        "maxConcurrent": serializers.IntegerField(allow_null=True),
        "createdTime": serializers.IntegerField(help_text="Epoch milliseconds."),
        "runs": serializers.IntegerField(),
        "states": serializers.DictField(child=serializers.IntegerField(), help_text="Runs by state."),
        "runList": serializers.ListField(child=serializers.DictField()),
        "search": SEARCH,
    },
)


def search_answer(sweep: Sweep) -> dict[str, Any] | None:
    """An adaptive search's spec, its trials counted by how they stand and its best run so far."""
    if sweep.kind != "search":
        return None
    state = search_state(sweep)
    spec = state.spec
    best = None
    if state.best_run is not None and state.best_value is not None:
        best = {"run": state.best_run, "value": state.best_value, "params": state.best_values}
    return {
        "algorithm": spec.algorithm,
        "metric": spec.metric,
        "goal": spec.goal,
        "trials": spec.trials,
        "maxConcurrent": spec.max_concurrent,
        "pruner": spec.pruner.kind if spec.pruner else None,
        "made": state.made,
        "ended": sweep.search_done,
        "done": state.complete,
        "running": state.running,
        "pruned": state.pruned,
        "failed": state.failed,
        "best": best,
    }


def found(request: Request, full_name: str) -> Sweep:
    try:
        return sweeps.find_sweep(request.user, full_name)
    except Sweep.DoesNotExist as error:
        raise ApiError(404, "NoSweepError", Message.of("api.sweep.not_found", sweep=full_name)) from error


class SweepsView(APIView):
    @extend_schema(operation_id="v2_sweeps_list", responses={200: OpenApiTypes.OBJECT})
    def get(self, request: Request) -> Response:
        """The sweeps you may see (yours; an admin's: everyone's), newest first."""
        return Response([sweeps.summary(sweep) for sweep in sweeps.visible_sweeps(request.user)[:500]])


class SweepView(APIView):
    @extend_schema(parameters=[SWEEP], responses={200: SWEEP_ANSWER})
    def get(self, request: Request, full_name: str) -> Response:
        """The sweep and every run: its values, state, duration and GPU-hours; an adaptive
        search's state (`search`: its trials by how they stand, its best run so far)."""
        sweep = found(request, full_name)
        return Response({**sweeps.summary(sweep), "runList": sweeps.run_rows(sweep), "search": search_answer(sweep)})


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
