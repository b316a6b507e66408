"""Virtual clusters and the server info (`/api/v1`, `/api/v2/info`), in OpenPAI's shapes."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from django.conf import settings
from django.db.models import Count
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema, extend_schema_view, inline_serializer
from rest_framework import serializers
from rest_framework.permissions import AllowAny
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from accounts import oidc
from catalogue import Message
from clusters.models import Node, VirtualCluster
from clusters.placement import Resources
from jobs.models import Job, JobState
from scheduling.quota import cluster_state, cluster_usage
from web.api.errors import ApiError
from web.api.shapes import epoch_ms


def _resources(res: Resources) -> dict[str, int]:
    # Ours and YARN-era OpenPAI's names, so either kind of client finds its keys.
    return {"cpu": res.cpu, "memory": res.memory_mb, "gpu": res.gpu, "vCores": res.cpu, "GPUs": res.gpu}


def _percent(used: int, total: int) -> float:
    return round(100.0 * used / total, 2) if total else 0.0


def virtual_cluster_states(user: Any) -> dict[str, dict[str, Any]]:
    nodes = list(Node.objects.prefetch_related("gpus__gpu_type"))
    _, vcs = cluster_state(nodes)
    rows = {vc.name: vc for vc in VirtualCluster.objects.prefetch_related("allowed_users", "allowed_groups")}
    job_counts = Job.objects.order_by().values_list("virtual_cluster__name", "state").annotate(n=Count("id"))
    counts = {(vc_name, state): n for vc_name, state, n in job_counts}
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
            # A VC's share is guaranteed to it and is all its own jobs may use; borrowed jobs of other
            # VCs running on its idle quota count in its resourcesUsed (docs/admin/sharing.md, "Borrowing and reclaim").
            "resourcesGuaranteed": _resources(state.limit),
            "resourcesTotal": _resources(state.limit),
            "numJobs": sum(counts.get((name, state), 0) for state in JobState.values),
            "numActiveJobs": counts.get((name, JobState.RUNNING), 0),
            "numPendingJobs": counts.get((name, JobState.WAITING), 0),
            # The portal's sharing (docs/admin/sharing.md): the queue's order, the per-user GPU cap and
            # the time limits in minutes (null: none).
            "queuePolicy": vc.queue_policy,
            "userGpuLimit": vc.user_gpu_limit,
            "defaultRunMinutes": vc.default_run_minutes,
            "maxRunMinutes": vc.max_run_minutes,
            "lendsIdleQuota": state.lends,  # (other VCs' borrowing jobs may run on its idle quota)
            # Kueue's lendingLimit/borrowingLimit in % of its quota (null: none), and what is lent and
            # borrowed now.
            "lendingLimitPercent": vc.lending_limit_percent,
            "borrowingLimitPercent": vc.borrowing_limit_percent,
            "resourcesLent": _resources(state.lent),
            "resourcesBorrowed": _resources(state.borrowed),
        }
    return answer


class VirtualClustersView(APIView):
    @extend_schema(operation_id="v2_virtual_clusters_list", responses={200: OpenApiTypes.OBJECT})
    def get(self, request: Request) -> Response:
        return Response(virtual_cluster_states(request.user))


@extend_schema_view(get=extend_schema(operation_id="v1_virtual_clusters_list"))
class V1VirtualClustersView(VirtualClustersView):
    """OpenPAI 0.x's path of the same list (its Python SDK computes free resources from it)."""


class VirtualClusterView(APIView):
    @extend_schema(responses={200: OpenApiTypes.OBJECT})
    def get(self, request: Request, vc_name: str) -> Response:
        states = virtual_cluster_states(request.user)
        if vc_name not in states:
            raise ApiError(404, "NoVirtualClusterError", Message.of("api.vc.not_found", vc=vc_name))
        return Response(states[vc_name])


def node_state(node: Node) -> str:
    """DOWN: its engine stopped answering (the heartbeat); CORDONED: an admin took it out; else READY."""
    if node.down_since is not None:
        return "DOWN"
    return "READY" if node.schedulable else "CORDONED"


def node_states() -> list[dict[str, Any]]:
    nodes = list(Node.objects.prefetch_related("gpus__gpu_type"))
    usage = cluster_usage(nodes)
    return [
        {
            "name": node.name,
            "address": node.address,
            "executor": node.executor,
            "state": node_state(node),
            "schedulable": node.available,
            "downSince": epoch_ms(node.down_since),
            "downReason": node.down_reason or None,
            "downReasonMessages": node.down_reason_messages or None,
            "resourcesTotal": _resources(Resources(gpu=len(node.gpus.all()), cpu=node.cpus, memory_mb=node.memory_mb)),
            "resourcesUsed": _resources(usage.used_by_node.get(node.pk, Resources())),
            "gpus": [{"index": gpu.index, "type": gpu.gpu_type.name} for gpu in node.gpus.all()],
        }
        for node in nodes
    ]


class NodesView(APIView):
    """Every node with its state: READY, CORDONED, or DOWN since when and why (the heartbeat)."""

    @extend_schema(operation_id="v2_nodes_list", responses={200: OpenApiTypes.OBJECT})
    def get(self, request: Request) -> Response:
        return Response(node_states())


class NodeView(APIView):
    @extend_schema(responses={200: OpenApiTypes.OBJECT})
    def get(self, request: Request, node_name: str) -> Response:
        for node in node_states():
            if node["name"] == node_name:
                return Response(node)
        raise ApiError(404, "NoNodeError", Message.of("api.node.not_found", node=node_name))


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
                "authnMethod": "OIDC" if oidc.enabled() else "basic",  # as authn/info says
            }
        )
