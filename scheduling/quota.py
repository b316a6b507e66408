"""What the cluster holds right now: the one usage and quota computation.

The scheduler (placement's inputs), the cluster page and the API all read it from here, so they
never count differently. A task holds its resources while it is RUNNING in a RUNNING job. Reads
the database and returns placement's plain values; placement itself never sees a model.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field, replace
from decimal import Decimal
from typing import Any

from clusters.models import Node, VirtualCluster
from clusters.placement import NodeState, Resources, VcState
from jobs.models import JobState, Task, TaskState


@dataclass
class ClusterUsage:
    nodes: list[NodeState]  # free GPUs/CPU/memory/ports per node (placement's input)
    vcs: dict[str, VcState]  # each VC's limit and what its running jobs hold
    totals: Resources  # all schedulable nodes together (what VC shares are shares of)
    used_by_node: dict[int, Resources] = field(default_factory=dict)  # node id -> held
    busy_gpus: set[tuple[int, int]] = field(default_factory=set)  # (node id, GPU index)


def task_resources(spec: dict[str, Any], role: str) -> Resources:
    res = spec["taskRoles"][role]["resourcePerInstance"]
    return Resources(gpu=res["gpu"], cpu=res["cpu"], memory_mb=res["memoryMB"])


def cluster_totals(nodes: list[Node]) -> Resources:
    schedulable = [n for n in nodes if n.available]
    return Resources(
        gpu=sum(len(n.gpus.all()) for n in schedulable),
        cpu=sum(n.cpus for n in schedulable),
        memory_mb=sum(n.memory_mb for n in schedulable),
    )


def vc_limit(share_percent: Decimal, totals: Resources) -> Resources:
    share = Decimal(share_percent) / 100
    return Resources(gpu=int(totals.gpu * share), cpu=int(totals.cpu * share), memory_mb=int(totals.memory_mb * share))


def _add(a: Resources, b: Resources) -> Resources:
    return Resources(gpu=a.gpu + b.gpu, cpu=a.cpu + b.cpu, memory_mb=a.memory_mb + b.memory_mb)


def _node_state(node: Node) -> NodeState:
    return NodeState(
        name=node.name,
        cpu_free=node.cpus,
        memory_free_mb=node.memory_mb,
        cpu_total=node.cpus,
        memory_total_mb=node.memory_mb,
        gpus_free={gpu.index: gpu.gpu_type.name for gpu in node.gpus.all()},
        port_range=(node.port_range_start, node.port_range_end),
        schedulable=node.available,
        gpu_total=len(node.gpus.all()),
        loopback=node.loopback,
    )


def holding_tasks() -> Any:
    """The tasks that hold resources now, with just the columns usage needs."""
    return (
        Task.objects.filter(state=TaskState.RUNNING, node__isnull=False, job__state=JobState.RUNNING)
        .select_related("job__virtual_cluster")
        .only("node_id", "role", "gpus", "ports", "job__spec", "job__virtual_cluster__name")
    )


def cluster_usage(nodes: list[Node]) -> ClusterUsage:
    """Nodes must come with `gpus__gpu_type` prefetched."""
    states = {node.id: _node_state(node) for node in nodes}
    used_by_vc: dict[str, Resources] = defaultdict(Resources)
    used_by_node: dict[int, Resources] = defaultdict(Resources)
    busy_gpus: set[tuple[int, int]] = set()
    for task in holding_tasks():
        # GPUs as allocated (the indices the task holds), CPU and memory as the role asks.
        res = replace(task_resources(task.job.spec, task.role), gpu=len(task.gpus))
        vc_name = task.job.virtual_cluster.name
        used_by_vc[vc_name] = _add(used_by_vc[vc_name], res)
        assert task.node_id is not None
        used_by_node[task.node_id] = _add(used_by_node[task.node_id], res)
        busy_gpus.update((task.node_id, int(index)) for index in task.gpus)
        state = states.get(task.node_id)
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
        vc.name: VcState(name=vc.name, limit=vc_limit(vc.share_percent, totals), used=used_by_vc[vc.name])
        for vc in VirtualCluster.objects.all()
    }
    return ClusterUsage(
        nodes=list(states.values()), vcs=vcs, totals=totals, used_by_node=dict(used_by_node), busy_gpus=busy_gpus
    )


def cluster_state(nodes: list[Node]) -> tuple[list[NodeState], dict[str, VcState]]:
    """Placement's inputs: node states and VC states."""
    usage = cluster_usage(nodes)
    return usage.nodes, usage.vcs
