"""The cluster page: virtual clusters with quota and usage, nodes with their GPUs, GPU types.

Usage comes from scheduling.quota, the computation the scheduler places jobs with.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from django.db.models import Count
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.utils.translation import gettext as _
from django.utils.translation import ngettext
from django.views.decorators.http import require_GET

from clusters.models import GpuType, Node, VirtualCluster
from clusters.placement import Resources
from clusters.shares import over_100_warning, share_warnings
from jobs.models import Job, JobState
from scheduling.quota import ClusterUsage, cluster_usage


def _percent(used: int, total: int) -> int:
    return min(100, round(100 * used / total)) if total else 0


@dataclass
class VcRow:
    vc: VirtualCluster
    quota: Resources
    used: Resources
    running_jobs: int = 0
    waiting_jobs: int = 0
    lends: bool = False  # other VCs' borrowing jobs may run on its idle quota
    lent: Resources = field(default_factory=Resources)  # what other VCs' jobs hold of its quota
    borrowed: Resources = field(default_factory=Resources)  # what its jobs hold of lenders' quotas

    @property
    def lent_text(self) -> str:
        return _resources_text(self.lent)

    @property
    def borrowed_text(self) -> str:
        return _resources_text(self.borrowed)

    @property
    def gpu_percent(self) -> int:
        return _percent(self.used.gpu, self.quota.gpu)

    @property
    def cpu_percent(self) -> int:
        return _percent(self.used.cpu, self.quota.cpu)

    @property
    def memory_percent(self) -> int:
        return _percent(self.used.memory_mb, self.quota.memory_mb)


@dataclass
class NodeRow:
    node: Node
    gpus: list[dict[str, Any]] = field(default_factory=list)
    used: Resources = field(default_factory=Resources)

    @property
    def free_gpus(self) -> int:
        return sum(1 for gpu in self.gpus if not gpu["used"])


def _vc_rows(usage: ClusterUsage) -> list[VcRow]:
    job_counts: dict[tuple[int, str], int] = {
        (vc_id, state): n
        for vc_id, state, n in Job.objects.filter(state__in=[JobState.RUNNING, JobState.WAITING])
        .order_by()
        .values_list("virtual_cluster_id", "state")
        .annotate(n=Count("id"))
    }
    return [
        VcRow(
            vc=vc,
            quota=usage.vcs[vc.name].limit,
            used=usage.vcs[vc.name].used,
            running_jobs=job_counts.get((vc.pk, JobState.RUNNING), 0),
            waiting_jobs=job_counts.get((vc.pk, JobState.WAITING), 0),
            lends=usage.vcs[vc.name].lends,
            lent=usage.vcs[vc.name].lent,
            borrowed=usage.vcs[vc.name].borrowed,
        )
        for vc in VirtualCluster.objects.all()
        if vc.name in usage.vcs
    ]


def _node_rows(nodes: list[Node], usage: ClusterUsage) -> list[NodeRow]:
    return [
        NodeRow(
            node=node,
            gpus=[
                {"index": gpu.index, "type": gpu.gpu_type.name, "used": (node.pk, gpu.index) in usage.busy_gpus}
                for gpu in node.gpus.all()
            ],
            used=usage.used_by_node.get(node.pk, Resources()),
        )
        for node in nodes
    ]


def _gpu_type_rows(node_rows: list[NodeRow]) -> list[dict[str, Any]]:
    rows = []
    for gpu_type in GpuType.objects.all():
        members = [gpu for row in node_rows if row.node.available for gpu in row.gpus if gpu["type"] == gpu_type.name]
        rows.append({"type": gpu_type, "total": len(members), "free": sum(1 for gpu in members if not gpu["used"])})
    return rows


def _resources_text(held: Resources) -> str:
    """`2 GPUs, 4 CPUs, 8192 MB`; empty when nothing is held."""
    if held == Resources():
        return ""
    return _("%(gpus)s, %(cpus)s, %(memory)s MB") % {
        "gpus": ngettext("%(n)s GPU", "%(n)s GPUs", held.gpu) % {"n": held.gpu},
        "cpus": ngettext("%(n)s CPU", "%(n)s CPUs", held.cpu) % {"n": held.cpu},
        "memory": held.memory_mb,
    }


def _totals_text(total: Resources) -> str:
    """`8 GPUs, 1 CPU, 4096 MB memory on schedulable nodes`: each count in its own number."""
    return _("%(gpus)s, %(cpus)s, %(memory)s MB memory on schedulable nodes") % {
        "gpus": ngettext("%(n)s GPU", "%(n)s GPUs", total.gpu) % {"n": total.gpu},
        "cpus": ngettext("%(n)s CPU", "%(n)s CPUs", total.cpu) % {"n": total.cpu},
        "memory": total.memory_mb,
    }


@require_GET
def cluster_overview(request: HttpRequest) -> HttpResponse:
    nodes = list(Node.objects.prefetch_related("gpus__gpu_type"))
    usage = cluster_usage(nodes)
    node_rows = _node_rows(nodes, usage)
    context = {
        "vc_rows": _vc_rows(usage),
        "node_rows": node_rows,
        "gpu_types": _gpu_type_rows(node_rows),
        "total_text": _totals_text(usage.totals),
        "share_warnings": [warning for warning in [over_100_warning(), *share_warnings().values()] if warning],
    }
    return render(request, "scheduling/overview.html", context)
