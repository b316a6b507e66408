"""`GET /api/v2/apps`: the live interactive apps (notebooks, TensorBoards, `http` ports) of your jobs,
across jobs, and those shared with a group of yours, with their idle time and the GPUs their jobs
hold (an admin's: everyone's, or with `?owner=` one user's). Times are epoch milliseconds, as the
jobs' are. `GET /api/v2/apps/<slug>`: one of them; `PATCH /api/v2/apps/<slug>`
`{"sharedWithGroup": <one of your groups> | null}`: its owner shares it with a group."""

from __future__ import annotations

from typing import Any, cast

from django.urls import reverse
from drf_spectacular.utils import OpenApiParameter, extend_schema, inline_serializer
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from accounts.permissions import is_admin
from catalogue import Message
from jobs import interactive
from jobs.my_apps import LiveApp, live_apps
from jobs.protocol import JobConfigError
from web.api.errors import ApiConfigError, ApiError
from web.api.shapes import epoch_ms

APP = inline_serializer(
    "LiveApp",
    {
        "slug": serializers.CharField(help_text="the app's name in its host and in PATCH /api/v2/apps/<slug>"),
        "kind": serializers.CharField(help_text="jupyter, tensorboard or http"),
        "role": serializers.CharField(help_text="the task role whose first task serves it"),
        "portLabel": serializers.CharField(),
        "job": serializers.CharField(help_text="`<user>~<job>`"),
        "owner": serializers.CharField(),
        "jobState": serializers.CharField(help_text="WAITING, RUNNING or STOPPING"),
        "ready": serializers.BooleanField(help_text="its server answered in this run of the job"),
        "idleSeconds": serializers.IntegerField(allow_null=True, help_text="null until it is ready"),
        "idleStopTime": serializers.IntegerField(
            allow_null=True, help_text="epoch ms: when its job is stopped if it stays idle; null: never"
        ),
        "gpus": serializers.IntegerField(help_text="GPUs its job's running tasks hold"),
        "openUrl": serializers.CharField(help_text="the portal's Open link (signs the browser in to the app)"),
        "stopUrl": serializers.CharField(help_text='stops its job: PUT `{"value": "STOP"}` (executionType)'),
        "sharedWithGroup": serializers.CharField(
            allow_null=True, help_text="the group whose members may open it too (its owner's choice); null: none"
        ),
        "sharedBy": serializers.CharField(
            allow_null=True, help_text="its owner, when it is listed because it is shared with a group of yours"
        ),
    },
    many=True,
)


def app_shape(live: LiveApp, request: Request) -> dict[str, Any]:
    job = live.job
    return {
        "slug": live.app.slug,
        "kind": live.app.kind,
        "role": live.app.role,
        "portLabel": live.app.port_label,
        "job": job.full_name,
        "owner": job.owner.get_username(),
        "jobState": job.state,
        "ready": live.ready,
        "idleSeconds": live.idle_seconds,
        "idleStopTime": epoch_ms(live.stop_at),
        "gpus": live.gpus,
        "openUrl": request.build_absolute_uri(reverse("apps:open", args=[live.app.slug])),
        "stopUrl": request.build_absolute_uri(reverse("api-job-execution", args=[job.full_name])),
        "sharedWithGroup": live.app.shared_with_group.name if live.app.shared_with_group else None,
        "sharedBy": live.shared_by or None,
    }


class AppsView(APIView):
    @extend_schema(
        operation_id="v2_apps",
        parameters=[OpenApiParameter("owner", str, description="admins: one user's apps only")],
        responses={200: APP},
    )
    def get(self, request: Request) -> Response:
        """Live apps of your waiting, running and stopping jobs (an admin's: everyone's), the
        longest idle first."""
        owner = request.query_params.get("owner", "") if is_admin(request.user) else ""
        return Response([app_shape(live, request) for live in live_apps(request.user, owner)])


def listed(request: Request, slug: str) -> LiveApp:
    """The live app of this slug among those the user's list holds; 404 otherwise."""
    found = next((live for live in live_apps(request.user) if live.app.slug == slug), None)
    if found is None:
        raise ApiError(404, "NoAppError", Message.of("api.app.not_found", app=slug))
    return found


class AppView(APIView):
    @extend_schema(operation_id="v2_app", responses={200: cast(Any, APP).child})
    def get(self, request: Request, slug: str) -> Response:
        """One live app of yours, or one shared with a group of yours (an admin: anyone's)."""
        return Response(app_shape(listed(request, slug), request))

    @extend_schema(
        operation_id="v2_app_share",
        request=inline_serializer(
            "AppSharing", {"sharedWithGroup": serializers.CharField(allow_null=True, help_text="one of your groups")}
        ),
        responses={200: cast(Any, APP).child},  # (one of the list's)
    )
    def patch(self, request: Request, slug: str) -> Response:
        """Share your app with one of your groups (its members may open it and see it in their My
        apps), or with none (`null`)."""
        app = listed(request, slug).app
        if app.job.owner_id != request.user.pk:
            raise ApiError(403, "ForbiddenUserError", Message.of("api.app.not_yours", app=slug))
        data = request.data if isinstance(request.data, dict) else {}
        try:
            interactive.share(app, request.user, str(data.get("sharedWithGroup") or ""))
        except JobConfigError as error:
            raise ApiConfigError(400, "InvalidParametersError", str(error), error) from error
        return Response(app_shape(listed(request, slug), request))
