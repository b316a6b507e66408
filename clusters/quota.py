"""What the cluster holds right now: free resources per node and each VC's limit and usage.

Reads the database and returns placement's plain inputs; placement itself never sees a model.
"""

from __future__ import annotations

from collections import defaultdict
from decimal import Decimal
from typing import Any

from clusters.models import Node, VirtualCluster
from clusters.placement import NodeState, Resources, VcState
from jobs.models import JobState, Task, TaskState


def task_resources(spec: dict[str, Any], role: str) -> Resources:
    res = spec["taskRoles"][role]["resourcePerInstance"]
    return Resources(gpu=res["gpu"], cpu=res["cpu"], memory_mb=res["memoryMB"])


def cluster_totals(nodes: list[Node]) -> Resources:
    schedulable = [n for n in nodes if n.schedulable]
    return Resources(
        gpu=sum(len(n.gpus.all()) for n in schedulable),
        cpu=sum(n.cpus for n in schedulable),
        memory_mb=sum(n.memory_mb for n in schedulable),
    )


def vc_limit(share_percent: Decimal, totals: Resources) -> Resources:
    share = Decimal(share_percent) / 100
    return Resources(gpu=int(totals.gpu * share), cpu=int(totals.cpu * share), memory_mb=int(totals.memory_mb * share))


def cluster_state(nodes: list[Node]) -> tuple[list[NodeState], dict[str, VcState]]:
    """Node states (free GPUs/CPU/memory/ports) and VC states (limit, used) from running tasks."""
    states = {
        node.id: NodeState(
            name=node.name,
            cpu_free=node.cpus,
            memory_free_mb=node.memory_mb,
            cpu_total=node.cpus,
            memory_total_mb=node.memory_mb,
            gpus_free={gpu.index: gpu.gpu_type.name for gpu in node.gpus.all()},
            port_range=(node.port_range_start, node.port_range_end),
            schedulable=node.schedulable,
            gpu_total=len(node.gpus.all()),
        )
        for node in nodes
    }
    used: dict[str, list[int]] = defaultdict(lambda: [0, 0, 0])
    holding = (
        Task.objects.filter(state=TaskState.RUNNING, node__isnull=False, job__state=JobState.RUNNING)
        .select_related("job__virtual_cluster")
        .only("node_id", "role", "gpus", "ports", "job__spec", "job__virtual_cluster__name")
    )
    for task in holding:
        res = task_resources(task.job.spec, task.role)
        vc_used = used[task.job.virtual_cluster.name]
        vc_used[0] += res.gpu
        vc_used[1] += res.cpu
        vc_used[2] += res.memory_mb
        state = states.get(task.node_id) if task.node_id is not None else None
        if state is None:
            continue
        state.cpu_free -= res.cpu
        state.memory_free_mb -= res.memory_mb
        for index in task.gpus:
            state.gpus_free.pop(index, None)
        for ports in task.ports.values():
            state.ports_used.update(ports)
    totals = cluster_totals(nodes)
    vcs = {
        vc.name: VcState(
            name=vc.name,
            limit=vc_limit(vc.share_percent, totals),
            used=Resources(*used[vc.name]),
        )
        for vc in VirtualCluster.objects.all()
    }
    return list(states.values()), vcs
