"""The cluster page: virtual clusters with quota and usage, nodes with their GPUs, GPU types."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

from django.db.models import Count
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_GET

from clusters.models import GpuType, Node, VirtualCluster
from jobs.models import Job, JobState, Task, TaskState


@dataclass
class Usage:
    gpus: int = 0
    cpus: int = 0
    memory_mb: int = 0


@dataclass
class VcRow:
    vc: VirtualCluster
    quota: Usage
    used: Usage
    running_jobs: int = 0
    waiting_jobs: int = 0

    @property
    def gpu_percent(self) -> int:
        return _percent(self.used.gpus, self.quota.gpus)

    @property
    def cpu_percent(self) -> int:
        return _percent(self.used.cpus, self.quota.cpus)

    @property
    def memory_percent(self) -> int:
        return _percent(self.used.memory_mb, self.quota.memory_mb)


@dataclass
class NodeRow:
    node: Node
    gpus: list[dict[str, Any]] = field(default_factory=list)
    used: Usage = field(default_factory=Usage)

    @property
    def free_gpus(self) -> int:
        return sum(1 for gpu in self.gpus if not gpu["used"])


def _percent(used: int, total: int) -> int:
    return min(100, round(100 * used / total)) if total else 0


def _task_resources(spec: dict[str, Any], role: str) -> tuple[int, int]:
    resources = ((spec.get("taskRoles") or {}).get(role) or {}).get("resourcePerInstance") or {}
    return int(resources.get("cpu") or 0), int(resources.get("memoryMB") or 0)


@require_GET
def cluster_overview(request: HttpRequest) -> HttpResponse:
    nodes = list(Node.objects.prefetch_related("gpus__gpu_type"))
    schedulable = [node for node in nodes if node.schedulable]
    total = Usage(
        gpus=sum(len(node.gpus.all()) for node in schedulable),
        cpus=sum(node.cpus for node in schedulable),
        memory_mb=sum(node.memory_mb for node in schedulable),
    )

    running = list(Task.objects.filter(state=TaskState.RUNNING).values_list("job_id", "role", "node_id", "gpus"))
    specs = dict(Job.objects.filter(pk__in={job_id for job_id, *_rest in running}).values_list("pk", "spec"))
    job_vcs = dict(Job.objects.filter(pk__in=specs.keys()).values_list("pk", "virtual_cluster_id"))
    used_by_vc: dict[int, Usage] = defaultdict(Usage)
    used_by_node: dict[int, Usage] = defaultdict(Usage)
    busy_gpus: set[tuple[int, int]] = set()
    for job_id, role, node_id, gpus in running:
        cpus, memory = _task_resources(specs.get(job_id) or {}, role)
        gpu_list = list(gpus or [])
        for usage in (used_by_vc[job_vcs.get(job_id, 0)], used_by_node[node_id or 0]):
            usage.gpus += len(gpu_list)
            usage.cpus += cpus
            usage.memory_mb += memory
        busy_gpus.update((node_id, int(index)) for index in gpu_list)

    job_counts: dict[tuple[int, str], int] = {
        (vc_id, state): n
        for vc_id, state, n in Job.objects.filter(state__in=[JobState.RUNNING, JobState.WAITING])
        .order_by()
        .values_list("virtual_cluster_id", "state")
        .annotate(n=Count("id"))
    }
    vc_rows = []
    for vc in VirtualCluster.objects.all():
        share = Decimal(vc.share_percent) / 100
        quota = Usage(
            gpus=int(total.gpus * share), cpus=int(total.cpus * share), memory_mb=int(total.memory_mb * share)
        )
        vc_rows.append(
            VcRow(
                vc=vc,
                quota=quota,
                used=used_by_vc.get(vc.pk, Usage()),
                running_jobs=job_counts.get((vc.pk, JobState.RUNNING), 0),
                waiting_jobs=job_counts.get((vc.pk, JobState.WAITING), 0),
            )
        )

    node_rows = [
        NodeRow(
            node=node,
            gpus=[
                {"index": gpu.index, "type": gpu.gpu_type.name, "used": (node.pk, gpu.index) in busy_gpus}
                for gpu in node.gpus.all()
            ],
            used=used_by_node.get(node.pk, Usage()),
        )
        for node in nodes
    ]
    gpu_types = []
    for gpu_type in GpuType.objects.all():
        members = [gpu for row in node_rows if row.node.schedulable for gpu in row.gpus if gpu["type"] == gpu_type.name]
        gpu_types.append(
            {"type": gpu_type, "total": len(members), "free": sum(1 for gpu in members if not gpu["used"])}
        )
    context = {"vc_rows": vc_rows, "node_rows": node_rows, "gpu_types": gpu_types, "total": total}
    return render(request, "clusters/overview.html", context)
