"""Whether a waiting job's storages can be mounted on any node: what placement (which knows nothing
of storages) cannot tell. A job that no node can mount a storage for waits, saying so in
why-pending, and is kept out of placement (it would only fail at start), as a job that can never
fit is. A node cannot mount a storage when it is a process node (or a Slurm node, whose tasks run as
processes) and the storage is NFS, or when it
failed to mount that storage within the last MOUNT_FAILURE_MEMORY_S (no NFS client, server down:
microsoft/pai issue 4361, a job stuck waiting with no reason).
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from dataclasses import dataclass, field

from catalogue import Message
from catalogue.reasons import Reason
from clusters.models import Node, StorageConfig
from jobs.protocol.spec import NormalizedSpec
from jobs.protocol.storages import storage_requests
from jobs.storage.configs import storage_configs
from scheduling.recent_trouble import RecentTrouble

MOUNT_FAILURE_MEMORY_S = 300.0


class MountFailures(RecentTrouble):
    """Which node could not mount which storage, lately."""

    def __init__(self) -> None:
        super().__init__(MOUNT_FAILURE_MEMORY_S)


def needed_storages(spec: NormalizedSpec, configs: dict[str, StorageConfig]) -> list[StorageConfig]:
    """The storage holding the users' areas (every task mounts it), and those the job names."""
    requests = storage_requests(spec)
    named = [configs[request.name] for request in requests.named if request.name in configs]
    if requests.defaults:
        named = [config for config in configs.values() if config.is_default]
    area = [config for config in configs.values() if config.holds_user_areas]
    return area + named


def why_not_mountable(node: Node, config: StorageConfig, failures: MountFailures, now: float) -> Message | None:
    if node.executor == Node.Executor.PROCESS and config.kind == StorageConfig.Kind.NFS:
        return Message.of("reason.storage.process_node", node=node.name)
    if node.executor == Node.Executor.SLURM and config.kind == StorageConfig.Kind.NFS:
        return Message.of("reason.storage.slurm_node", node=node.name)
    seen = failures.recent(node.name, config.name, now)
    if seen is not None:
        reason, when = seen
        return Message.of("reason.storage.mount_failed", node=node.name, seconds=int(now - when), error=reason)
    return None


@dataclass
class Gate:
    blocked: dict[int, Reason] = field(default_factory=dict)  # job -> why no node can mount its storage
    avoid: dict[int, frozenset[str]] = field(default_factory=dict)  # job -> nodes that cannot mount it
    notes: dict[int, list[Message]] = field(default_factory=dict)  # job -> which nodes it avoids and why


def storage_gate(jobs: Iterable[tuple[int, NormalizedSpec]], nodes: list[Node], failures: MountFailures) -> Gate:
    """For each job (key, spec): the available nodes that cannot mount a storage it needs (placement
    avoids them) and, when that is all of them, why it waits."""
    gate = Gate()
    configs = {config.name: config for config in storage_configs()}
    available = [node for node in nodes if node.available]
    if not configs or not available:
        return gate
    now = time.monotonic()
    for key, spec in jobs:
        reasons: dict[str, Message] = {}
        for config in needed_storages(spec, configs):
            for node in available:
                why = why_not_mountable(node, config, failures, now)
                if why and node.name not in reasons:
                    reasons[node.name] = Message.of("reason.storage.on", storage=config.name, why=why)
        if not reasons:
            continue
        said = list(reasons.values())
        if len(reasons) == len(available):
            gate.blocked[key] = [Message.of("reason.storage.no_node", nodes=said)]
        else:
            gate.avoid[key] = frozenset(reasons)
            gate.notes[key] = said
    return gate
