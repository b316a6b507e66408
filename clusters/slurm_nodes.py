"""Slurm's nodes as the portal's Node rows: what sinfo says, written where pages, quotas and tasks
read nodes (the scheduler's Slurm pass, `createvc --slurm-partition` and the admin call it)."""

from __future__ import annotations

import logging

from django.conf import settings
from django.db import transaction
from django.utils import timezone
from django.utils.translation import gettext as _

from catalogue import Message
from clusters.models import Gpu, GpuType, Node, down_reason_fields
from clusters.slurm import client, commands
from clusters.slurm.status import SlurmNode, parse_nodes

log = logging.getLogger("pai.slurm")


def read_nodes(partitions: list[str]) -> list[SlurmNode]:
    """Raises client.SlurmError when Slurm does not answer."""
    return parse_nodes(client.run(commands.sinfo_argv(partitions), settings.PAI_SLURM_CONF))


class PartitionError(Exception):
    pass


def check_partition(partition: str) -> list[SlurmNode]:
    """A VC's partition must exist in Slurm and have nodes (createvc and the admin ask this); its
    nodes are synced at once (the scheduler keeps them fresh). PartitionError says what is wrong."""
    try:
        nodes = read_nodes([partition])
    except client.SlurmError as exc:
        raise PartitionError(_("Slurm does not answer (PAI_SLURM_CONF?): %(error)s") % {"error": exc}) from exc
    if not nodes:
        raise PartitionError(_("Slurm has no partition %(name)r (or it has no nodes).") % {"name": partition})
    sync_nodes(nodes)
    return nodes


def sync_nodes(nodes: list[SlurmNode]) -> None:
    """Slurm's nodes as Node rows (executor `slurm`) with their GPUs; Slurm's state on each, and a
    node Slurm will not use (down, drained...) marked down with Slurm's words."""
    gpu_types = {name: GpuType.objects.get_or_create(name=name)[0] for n in nodes for name in n.gpus if name}
    for slurm_node in nodes:
        usable = slurm_node.usable
        reason = (
            Message.of("slurm.node_state_why", state=slurm_node.state, why=slurm_node.reason)
            if slurm_node.reason
            else Message.of("slurm.node_state", state=slurm_node.state)
        )
        with transaction.atomic():
            node, _ = Node.objects.get_or_create(
                name=slurm_node.name,
                defaults={"executor": Node.Executor.SLURM, "address": slurm_node.address},
            )
            if node.executor != Node.Executor.SLURM:
                log.warning("Slurm node %s has the name of a portal node: left out", slurm_node.name)
                continue
            wanted = {
                "address": slurm_node.address,
                "cpus": slurm_node.cpus,
                "memory_mb": slurm_node.memory_mb,
                "slurm_partition": slurm_node.partition,
                "slurm_state": slurm_node.state,
                **down_reason_fields([] if usable else [reason]),
            }
            if usable and node.down_since is not None:
                wanted["down_since"] = None
            elif not usable and node.down_since is None:
                wanted["down_since"] = timezone.now()
            if any(getattr(node, key) != value for key, value in wanted.items()):
                Node.objects.filter(pk=node.pk).update(**wanted)
            types = [name for name, count in sorted(slurm_node.gpus.items()) if name for _ in range(count)]
            if [g.gpu_type.name for g in node.gpus.select_related("gpu_type").order_by("index")] != types:
                node.gpus.all().delete()
                Gpu.objects.bulk_create(
                    Gpu(node=node, index=index, gpu_type=gpu_types[name]) for index, name in enumerate(types)
                )
