"""Virtual clusters, users and `/api/v2/info`, in OpenPAI's shapes."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.auth.password_validation import validate_password
from django.core.exceptions import ValidationError as DjangoValidationError
from django.db import IntegrityError, transaction
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema, inline_serializer
from rest_framework import serializers
from rest_framework.permissions import AllowAny
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from accounts.permissions import is_admin
from clusters.models import Node, VirtualCluster
from clusters.placement import Resources
from jobs.api.auth import IsAdminNotApplicationToken
from jobs.api.errors import ApiError


def _resources(res: Resources) -> dict[str, int]:
    # Ours and YARN-era OpenPAI's names, so either kind of client finds its keys.
    return {"cpu": res.cpu, "memory": res.memory_mb, "gpu": res.gpu, "vCores": res.cpu, "GPUs": res.gpu}


def _percent(used: int, total: int) -> float:
    return round(100.0 * used / total, 2) if total else 0.0


def virtual_cluster_states(user: Any) -> dict[str, dict[str, Any]]:
    from clusters.quota import cluster_state

    nodes = list(Node.objects.prefetch_related("gpus__gpu_type"))
    _, vcs = cluster_state(nodes)
    rows = {vc.name: vc for vc in VirtualCluster.objects.prefetch_related("allowed_users")}
    answer = {}
    for name, state in vcs.items():
        vc = rows[name]
        # GPUs decide usage when the cluster has any, else CPUs (a CPU-only box).
        by_gpu = state.limit.gpu > 0
        used, total = (state.used.gpu, state.limit.gpu) if by_gpu else (state.used.cpu, state.limit.cpu)
        share = float(Decimal(vc.share_percent))
        answer[name] = {
            "capacity": share,
            "usedCapacity": round(share * _percent(used, total) / 100, 2),
            "maxCapacity": share,
            "dedicated": False,
            "status": "RUNNING",
            "description": vc.description,
            "allowed": vc.is_open_to(user),
            "resourcesUsed": _resources(state.used),
            "resourcesTotal": _resources(state.limit),
        }
    return answer


class VirtualClustersView(APIView):
    @extend_schema(operation_id="v2_virtual_clusters_list", responses={200: OpenApiTypes.OBJECT})
    def get(self, request: Request) -> Response:
        return Response(virtual_cluster_states(request.user))


class VirtualClusterView(APIView):
    @extend_schema(responses={200: OpenApiTypes.OBJECT})
    def get(self, request: Request, vc_name: str) -> Response:
        states = virtual_cluster_states(request.user)
        if vc_name not in states:
            raise ApiError(404, "NoVirtualClusterError", f"Virtual cluster {vc_name} is not found.")
        return Response(states[vc_name])


def user_row(user: Any) -> dict[str, Any]:
    open_vcs = [vc.name for vc in VirtualCluster.objects.all() if vc.is_open_to(user)]
    return {
        "username": user.get_username(),
        "email": user.email,
        "grouplist": ["default", *(["admingroup"] if is_admin(user) else [])],
        "virtualCluster": open_vcs,
        "admin": is_admin(user),
        "extension": {},
    }


class NewUserRequest(serializers.Serializer):
    username = serializers.RegexField(r"^[\w.@+-]+\Z", max_length=150)
    password = serializers.CharField(max_length=4096, trim_whitespace=False)
    email = serializers.EmailField(required=False, allow_blank=True)
    admin = serializers.BooleanField(required=False, default=False)
    virtualCluster = serializers.ListField(child=serializers.CharField(max_length=64), required=False)


class UsersView(APIView):
    """`POST /api/v2/users` (admin only, never with an application token)."""

    permission_classes = [IsAdminNotApplicationToken]

    @extend_schema(request=NewUserRequest, responses={201: OpenApiTypes.OBJECT})
    def post(self, request: Request) -> Response:
        form = NewUserRequest(data=request.data)
        form.is_valid(raise_exception=True)
        fields = form.validated_data
        User = get_user_model()
        candidate = User(username=fields["username"], email=fields.get("email", ""))
        try:
            validate_password(fields["password"], candidate)
        except DjangoValidationError as error:
            raise ApiError(400, "InvalidParametersError", "password: " + " ".join(error.messages)) from error
        vcs = list(VirtualCluster.objects.filter(name__in=fields.get("virtualCluster", [])))
        missing = sorted(set(fields.get("virtualCluster", [])) - {vc.name for vc in vcs})
        if missing:
            raise ApiError(404, "NoVirtualClusterError", f"Virtual cluster(s) not found: {', '.join(missing)}.")
        try:
            with transaction.atomic():
                user = User.objects.create_user(
                    fields["username"], email=fields.get("email", ""), password=fields["password"]
                )
                if fields["admin"]:
                    user.is_staff = user.is_superuser = True
                    user.save(update_fields=["is_staff", "is_superuser"])
                for vc in vcs:  # an open VC stays open; a restricted one lets this user in
                    if vc.allowed_users.exists():
                        vc.allowed_users.add(user)
        except IntegrityError as error:
            raise ApiError(409, "ConflictUserError", f"User name {fields['username']} already exists.") from error
        return Response({"message": "User is created successfully", **user_row(user)}, status=201)


class UserView(APIView):
    """`GET /api/v2/users/<user>`: yourself, or anyone for admins; never the password."""

    @extend_schema(responses={200: OpenApiTypes.OBJECT})
    def get(self, request: Request, username: str) -> Response:
        if username != request.user.get_username() and not is_admin(request.user):
            raise ApiError(404, "NoUserError", f"User {username} is not found.")
        user = get_user_model().objects.filter(username=username).first()
        if user is None:
            raise ApiError(404, "NoUserError", f"User {username} is not found.")
        return Response(user_row(user))


INFO_RESPONSE = inline_serializer(
    "Info",
    {
        "name": serializers.CharField(),
        "version": serializers.CharField(),
        "launcherType": serializers.CharField(),
        "authnMethod": serializers.CharField(),
    },
)


class InfoView(APIView):
    authentication_classes: list = []
    permission_classes = [AllowAny]

    @extend_schema(responses={200: INFO_RESPONSE}, auth=[])
    def get(self, request: Request) -> Response:
        return Response(
            {
                "name": "PAI Portal RESTful API",
                "version": settings.SPECTACULAR_SETTINGS.get("VERSION", "1.0.0"),
                "launcherType": "portal",
                "authnMethod": "basic",
            }
        )
