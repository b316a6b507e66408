"""VC quotas as shares of the nodes: the one rule the scheduler (scheduling.quota), the cluster
page, `createvc` and the admin all read, the warning for a VC whose share gives it nothing, and
the check that the shares add up to 100 % at most.

A VC with a Slurm partition has the partition as its quota; the others share the portal's own
nodes by `clusters.placement.apportion` (largest remainder, so no unit is lost to rounding).
"""

from __future__ import annotations

from collections import defaultdict
from decimal import Decimal

from django.utils.translation import gettext as _
from django.utils.translation import ngettext

from clusters.models import Gpu, Node, VirtualCluster
from clusters.placement import Resources, apportion, empty_shares
from queries.prepared import Prepared

# Every GPU as (node id, index, type name): read at every placement (its SQL compiled once).
_GPUS: Prepared[tuple[int, int, str]] = Prepared(
    lambda: Gpu.objects.order_by().values_list("node_id", "index", "gpu_type__name")
)


def node_gpus() -> dict[int, dict[int, str]]:
    """node id -> {GPU index: GPU type name}, read as plain values (no model per GPU)."""
    gpus: dict[int, dict[int, str]] = defaultdict(dict)
    for node_id, index, type_name in _GPUS():
        gpus[node_id][index] = type_name
    return gpus


def cluster_totals(nodes: list[Node], gpus: dict[int, dict[int, str]]) -> Resources:
    schedulable = [n for n in nodes if n.available]
    return Resources(
        gpu=sum(len(gpus.get(n.pk, {})) for n in schedulable),
        cpu=sum(n.cpus for n in schedulable),
        memory_mb=sum(n.memory_mb for n in schedulable),
    )


def vc_nodes(vc: VirtualCluster, nodes: list[Node]) -> list[Node]:
    """The nodes a VC's jobs run on: its Slurm partition's, or else the portal's own (every node
    but Slurm's: placement never sees those)."""
    if vc.slurm_partition:
        return [node for node in nodes if node.slurm_partition == vc.slurm_partition]
    return [node for node in nodes if node.executor != Node.Executor.SLURM]


def own_totals(nodes: list[Node], gpus: dict[int, dict[int, str]]) -> Resources:
    """What the share VCs share: the portal's own schedulable nodes."""
    return cluster_totals([node for node in nodes if node.executor != Node.Executor.SLURM], gpus)


def vc_quotas(
    nodes: list[Node], gpus: dict[int, dict[int, str]], vcs: list[VirtualCluster] | None = None
) -> dict[str, Resources]:
    """Every VC's quota: its whole Slurm partition, or its share of the portal's own nodes,
    apportioned among all share VCs together (a share alone cannot be rounded fairly)."""
    vcs = list(VirtualCluster.objects.all()) if vcs is None else vcs
    shared = apportion({vc.name: vc.share_percent for vc in vcs if not vc.slurm_partition}, own_totals(nodes, gpus))
    return {vc.name: cluster_totals(vc_nodes(vc, nodes), gpus) if vc.slurm_partition else shared[vc.name] for vc in vcs}


def share_warnings() -> dict[str, str]:
    """VC name -> why its share gives it nothing of a resource the cluster has (so its jobs
    asking for it can never run), for the cluster page, `createvc` and the admin."""
    nodes = list(Node.objects.all())
    gpus = node_gpus()
    vcs = [vc for vc in VirtualCluster.objects.all() if not vc.slurm_partition]
    totals = own_totals(nodes, gpus)
    empty = empty_shares(vc_quotas(nodes, gpus, vcs), totals)
    warnings = {}
    for vc in vcs:
        kinds = empty.get(vc.name)
        if not kinds:
            continue
        names = {
            "gpu": ngettext("%(n)s GPU", "%(n)s GPUs", totals.gpu) % {"n": totals.gpu},
            "cpu": ngettext("%(n)s CPU", "%(n)s CPUs", totals.cpu) % {"n": totals.cpu},
            "memory": _("%(n)s MB memory") % {"n": totals.memory_mb},
        }
        warnings[vc.name] = _(
            "The share of VC %(vc)s (%(share)s%%) gives it none of the cluster's %(what)s: its jobs asking "
            "for them can never run. Raise its share (and lower another's) or add nodes."
        ) % {
            "vc": vc.name,
            "share": f"{vc.share_percent.normalize():f}",
            "what": _(", ").join(names[kind] for kind in kinds),
        }
    return warnings


def total_share(changed: str | None = None, share: Decimal | int = 0) -> Decimal:
    """The share VCs' shares together (a Slurm VC's quota is its partition, no share), with VC
    `changed` at `share`: how `createvc` and the admin form check a change before saving it."""
    shares = dict(VirtualCluster.objects.filter(slurm_partition="").values_list("name", "share_percent"))
    if changed is not None:
        shares[changed] = Decimal(share)
    return sum(shares.values(), Decimal(0))


def over_100_warning(total: Decimal | None = None) -> str:
    """Why the VCs' quotas promise more than the cluster has; "" while their shares add up to
    100 % at most. For the cluster page, the admin and `createvc`."""
    total = total_share() if total is None else total
    if total <= 100:
        return ""
    return _(
        "The VCs' shares add up to %(total)s%%, more than the whole cluster: together their quotas "
        "promise more than there is, so a VC's jobs may wait although its quota looks free. Lower a "
        "share (the default VC's, say) until they add up to 100%% at most."
    ) % {"total": f"{total.normalize():f}"}
