"""What the cluster holds right now: the one usage and quota computation.

The scheduler (placement's inputs), the cluster page and the API all read it from here, so they
never count differently. A task holds its resources while it is RUNNING in a RUNNING (or STOPPING) job. Reads
the database and returns placement's plain values; placement itself never sees a model.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from copy import copy
from dataclasses import dataclass, field, replace
from typing import Any

from django.conf import settings
from django.db.models.functions import Coalesce

from clusters.models import Node, VirtualCluster
from clusters.placement import JobRequest, NodeState, PortRequest, Resources, TaskRequest, VcState
from clusters.shares import cluster_totals, node_gpus, vc_quotas
from jobs.models import Job, JobState, Task, TaskState
from jobs.protocol import launcher_env
from jobs.protocol.runtime_env import undeclared_ports
from jobs.protocol.spec import NormalizedSpec, gpu_type
from jobs.protocol.v1 import port_begin_at
from jobs.ssh import ports_with_ssh
from queries.prepared import Prepared


@dataclass
class ClusterUsage:
    nodes: list[NodeState]  # free GPUs/CPU/memory/ports per node (placement's input)
    vcs: dict[str, VcState]  # each VC's limit and what its running jobs hold
    totals: Resources  # all schedulable nodes together (what VC shares are shares of)
    used_by_node: dict[int, Resources] = field(default_factory=dict)  # node id -> held
    busy_gpus: set[tuple[int, int]] = field(default_factory=set)  # (node id, GPU index)
    used_by_job: dict[int, Resources] = field(default_factory=dict)  # running job id -> what it holds


def task_resources(spec: NormalizedSpec, role: str) -> Resources:
    res = spec["taskRoles"][role]["resourcePerInstance"]
    return Resources(gpu=res["gpu"], cpu=res["cpu"], memory_mb=res["memoryMB"])


def task_requests(spec: NormalizedSpec) -> list[TaskRequest]:
    """Placement's view of a job's tasks (the scheduler's placement, the Slurm backend's ask and
    the submit page's never-fits check read the same)."""
    begin_at = port_begin_at(spec)
    implied_ports = undeclared_ports(spec)
    requests = []
    for role, role_spec in spec["taskRoles"].items():
        res = role_spec["resourcePerInstance"]
        # Its declared ports (the Jupyter/TensorBoard plugins declared theirs when the spec was read),
        # an `http` one where its commands name it undeclared, and every task one for its sshd.
        wanted = ports_with_ssh(res.get("ports") or implied_ports)
        for index in range(role_spec["instances"]):
            # The master task gets the rendezvous port too (MASTER_PORT: jobs.protocol.launcher_env).
            ports = [
                PortRequest(label=label, count=count, begin_at=(begin_at.get(role) or {}).get(label, 0))
                for label, count in launcher_env.port_requests(spec, role, index, wanted).items()
            ]
            requests.append(
                TaskRequest(
                    role=role, index=index, cpu=res["cpu"], memory_mb=res["memoryMB"], gpu=res["gpu"], ports=ports
                )
            )
    return requests


def job_request(
    key: int, vc: str, spec: NormalizedSpec, tasks: list[TaskRequest] | None = None, **queued: Any
) -> JobRequest:
    """Placement's view of a job: what its spec asks (its tasks, given where the caller keeps them,
    and its GPU type); `queued`: the rest of JobRequest, where it stands in its queue, which only
    the placing pass knows."""
    tasks = task_requests(spec) if tasks is None else tasks
    return JobRequest(key=key, vc=vc, tasks=tasks, gpu_type=gpu_type(spec), **queued)


def vc_quota(vc: VirtualCluster, nodes: list[Node], gpus: dict[int, dict[int, str]]) -> Resources:
    """A VC's quota: its share of the portal's own nodes (apportioned with the other share VCs'
    by clusters.shares), or its whole partition (Slurm places its jobs). The one rule: the
    scheduler, the pages and the fix offers all read it here."""
    return vc_quotas(nodes, gpus)[vc.name]


def _add(a: Resources, b: Resources) -> Resources:
    return Resources(gpu=a.gpu + b.gpu, cpu=a.cpu + b.cpu, memory_mb=a.memory_mb + b.memory_mb)


def _node_state(node: Node, gpus: dict[int, str]) -> NodeState:
    return NodeState(
        name=node.name,
        cpu_free=node.cpus,
        memory_free_mb=node.memory_mb,
        cpu_total=node.cpus,
        memory_total_mb=node.memory_mb,
        gpus_free=dict(gpus),
        port_range=(node.port_range_start, node.port_range_end),
        schedulable=node.available,
        down=node.schedulable and node.down_since is not None,
        gpu_total=len(gpus),
        loopback=node.loopback,
    )


def _as_up(node: Node) -> Node:
    up = copy(node)
    up.down_since = None
    return up


class SpecCache:
    """Job specs by job id, read from the database once: a spec never changes after submit, so
    the scheduler keeps one of these across passes and parses each job's spec only once."""

    LIMIT = 100_000  # past this many, start over (finished jobs' specs are no longer asked for)

    def __init__(self) -> None:
        self._specs: dict[int, NormalizedSpec] = {}

    def get_many(self, job_ids: Iterable[int]) -> dict[int, NormalizedSpec]:
        wanted = set(job_ids)
        missing = wanted - self._specs.keys()
        if len(self._specs) + len(missing) > self.LIMIT:
            self._specs.clear()
            missing = wanted
        if missing:
            self._specs.update(Job.objects.filter(pk__in=missing).values_list("pk", "spec"))
        return {job_id: self._specs[job_id] for job_id in wanted if job_id in self._specs}


def holding_tasks() -> list[tuple[Any, ...]]:
    """(node id, role, GPUs, ports, job id, VC name, owner, own VC name) of each task that holds
    resources now (a stopping job's too: its tasks are in their grace period until it is STOPPED).
    The VC is the one whose quota it holds: the lender's for a job running on borrowed quota."""
    rows = _HOLDING()
    return [(node, role, gpus, ports, job, vc, owner, own) for node, role, gpus, ports, job, owner, own, vc in rows]


def lends(vc: VirtualCluster) -> bool:
    """Whether other VCs' borrowing jobs may run on this VC's idle quota (never a Slurm VC's)."""
    return not vc.slurm_partition and (vc.lends_idle_quota or settings.PAI_LEND_IDLE_QUOTA)


def percent_of(quota: Resources, percent: int | None) -> Resources | None:
    """A lending or borrowing limit (a percent of the VC's quota) in absolute numbers, rounded down
    (a lender keeps the odd GPU); None: no limit."""
    if percent is None:
        return None
    return Resources(
        gpu=quota.gpu * percent // 100, cpu=quota.cpu * percent // 100, memory_mb=quota.memory_mb * percent // 100
    )


def may_borrow(priority_class: str) -> bool:
    """Whether a job of this class may run on another VC's idle quota (PAI_BORROWING_CLASSES;
    asked only for the portal's own VCs' jobs: a Slurm VC's jobs are Slurm's to place)."""
    return priority_class in settings.PAI_BORROWING_CLASSES


# Read at every placement: their SQL compiled once.
# Read at every placement (their SQL compiled once). holding_tasks' columns, the VC whose quota a
# task holds last (a Prepared read's annotations come last).
_HOLDING: Prepared[Any] = Prepared(
    lambda: Task.objects.filter(
        state=TaskState.RUNNING, node__isnull=False, job__state__in=[JobState.RUNNING, JobState.STOPPING]
    ).values_list(
        "node_id",
        "role",
        "gpus",
        "ports",
        "job_id",
        "job__owner__username",
        "job__virtual_cluster__name",
        Coalesce("job__borrowed_from__name", "job__virtual_cluster__name"),
    )
)
_ALL_VCS: Prepared[VirtualCluster] = Prepared(lambda: VirtualCluster.objects.all())


def cluster_usage(
    nodes: list[Node], specs: SpecCache | None = None, gpus: dict[int, dict[int, str]] | None = None
) -> ClusterUsage:
    """Placement's nodes are the portal's own; Slurm's nodes (synced from sinfo) count only for
    the VCs of their partition, whose quota is the partition (Slurm places their jobs). `gpus`:
    node_gpus() when the caller read it already (the scheduler, once a pass)."""
    return _usage(nodes, holding_tasks(), specs, gpus)


def cluster_capacity(nodes: list[Node]) -> tuple[list[NodeState], dict[str, VcState]]:
    """Placement's inputs as if nothing ran: what the never-fits judgement reads (the nodes, their
    sizes and the VCs' quotas; what runs now never decides whether a job can ever fit), without
    reading every running task and its job's spec."""
    usage = _usage(nodes, [], None)
    return usage.nodes, usage.vcs


def _usage(
    nodes: list[Node], holding: list[Any], specs: SpecCache | None, gpus: dict[int, dict[int, str]] | None = None
) -> ClusterUsage:
    gpus_by_node = node_gpus() if gpus is None else gpus
    own_nodes = [node for node in nodes if node.executor != Node.Executor.SLURM]
    states = {node.id: _node_state(node, gpus_by_node.get(node.pk, {})) for node in own_nodes}
    used_by_vc: dict[str, Resources] = defaultdict(Resources)
    used_by_node: dict[int, Resources] = defaultdict(Resources)
    busy_gpus: set[tuple[int, int]] = set()
    used_by_job: dict[int, Resources] = defaultdict(Resources)
    gpus_by_user: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))  # VC -> user -> GPUs
    lent: dict[str, Resources] = defaultdict(Resources)  # lender -> what borrowing jobs hold of its quota
    borrowed: dict[str, Resources] = defaultdict(Resources)  # VC -> what its jobs hold of lenders' quotas
    spec_of = (specs or SpecCache()).get_many({row[4] for row in holding}) if holding else {}
    for node_id, role, gpus, ports, job_id, vc_name, owner, own_vc in holding:
        # GPUs as allocated (the indices the task holds), CPU and memory as the role asks.
        res = replace(task_resources(spec_of[job_id], role), gpu=len(gpus))
        used_by_vc[vc_name] = _add(used_by_vc[vc_name], res)
        if vc_name != own_vc:
            lent[vc_name] = _add(lent[vc_name], res)
            borrowed[own_vc] = _add(borrowed[own_vc], res)
        used_by_node[node_id] = _add(used_by_node[node_id], res)
        used_by_job[job_id] = _add(used_by_job[job_id], res)
        gpus_by_user[vc_name][owner] += len(gpus)
        busy_gpus.update((node_id, int(index)) for index in gpus)
        state = states.get(node_id)
        if state is None:
            continue
        state.cpu_free -= res.cpu
        state.memory_free_mb -= res.memory_mb
        for index in gpus:
            state.gpus_free.pop(index, None)
        for port_list in ports.values():
            state.ports_used.update(port_list)
    totals = cluster_totals(own_nodes, gpus_by_node)
    all_vcs = _ALL_VCS()
    quotas = vc_quotas(nodes, gpus_by_node, all_vcs)
    # The quotas were the nodes down now back: a job over its quota only while they are down waits.
    down = [node for node in nodes if node.schedulable and node.down_since is not None]
    quotas_with_down = (
        vc_quotas([_as_up(node) if node in down else node for node in nodes], gpus_by_node, all_vcs) if down else quotas
    )
    vcs = {
        vc.name: VcState(
            name=vc.name,
            limit=quotas[vc.name],
            used=used_by_vc[vc.name],
            fair_share=vc.queue_policy == VirtualCluster.QueuePolicy.FAIR_SHARE,
            user_gpu_limit=vc.user_gpu_limit,
            gpus_by_user=dict(gpus_by_user[vc.name]),
            lends=lends(vc),
            best_effort=vc.queue_policy == VirtualCluster.QueuePolicy.BEST_EFFORT,
            backfill=vc.backfill and not vc.slurm_partition,
            limit_with_down=quotas_with_down[vc.name] if down else None,
            lending_limit=percent_of(quotas[vc.name], vc.lending_limit_percent),
            borrowing_limit=percent_of(quotas[vc.name], vc.borrowing_limit_percent),
            lent=lent[vc.name],
            borrowed=borrowed[vc.name],
        )
        for vc in all_vcs
    }
    return ClusterUsage(
        nodes=list(states.values()),
        vcs=vcs,
        totals=totals,
        used_by_node=dict(used_by_node),
        busy_gpus=busy_gpus,
        used_by_job=dict(used_by_job),
    )


def cluster_state(nodes: list[Node], specs: SpecCache | None = None) -> tuple[list[NodeState], dict[str, VcState]]:
    """Placement's inputs: node states and VC states."""
    usage = cluster_usage(nodes, specs)
    return usage.nodes, usage.vcs
