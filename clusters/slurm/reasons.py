"""Why Slurm keeps a job pending, in the portal's words, with the numbers behind it."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from catalogue import Message, Text
from clusters.slurm import texts as t
from clusters.slurm.status import SlurmJob, SlurmNode

# Slurm prints a start time a year or more ahead when it cannot tell (jobs without a time limit).
EXPECTED_START_HORIZON = timedelta(days=300)


@dataclass(frozen=True)
class Ask:
    """What a job asks of Slurm, all tasks together."""

    tasks: int
    gpus: int
    cpus: int
    memory_mb: int


@dataclass(frozen=True)
class PartitionUse:
    """A partition's resources as sinfo reports them: in all, and free now (usable nodes only)."""

    name: str
    nodes: int
    gpus: int
    cpus: int
    memory_mb: int
    free_gpus: int
    free_cpus: int
    free_memory_mb: int

    @classmethod
    def of(cls, name: str, nodes: list[SlurmNode]) -> PartitionUse:
        mine = [node for node in nodes if node.partition == name]
        usable = [node for node in mine if node.usable]
        return cls(
            name=name,
            nodes=len(mine),
            gpus=sum(node.gpu_count for node in usable),
            cpus=sum(node.cpus for node in usable),
            memory_mb=sum(node.memory_mb for node in usable),
            free_gpus=sum(node.gpu_count - node.gpus_used for node in usable),
            free_cpus=sum(node.cpus - node.cpus_allocated for node in usable),
            free_memory_mb=sum(node.memory_mb - node.memory_allocated_mb for node in usable),
        )


def _asks(ask: Ask) -> Message:
    return Message.of("slurm.asks", tasks=ask.tasks, gpus=ask.gpus, cpus=ask.cpus, memory_mb=ask.memory_mb)


def _sentence(text: Text, ask: Ask, p: PartitionUse) -> Message:
    """One of Slurm's sentences with the numbers it names."""
    values: dict[str, Any] = {
        "partition": p.name,
        "nodes": p.nodes,
        "gpus": p.gpus,
        "cpus": p.cpus,
        "memory_mb": p.memory_mb,
        "free_gpus": p.free_gpus,
        "free_cpus": p.free_cpus,
        "free_memory_mb": p.free_memory_mb,
        "ask_gpus": ask.gpus,
        "ask_cpus": ask.cpus,
        "asks": _asks(ask),
    }
    return text(**{name: values[name] for name in text.names})


# Slurm's reason codes for a job it will never run as asked, whatever frees up (its request
# exceeds what the partition's nodes or limits are configured with): the portal ends the job
# FAILED with the reason instead of leaving it pending (or submitting it again) forever. Every
# other reason (ReqNodeNotAvail, NodeDown, PartitionNodeLimit, which Slurm also gives while nodes
# are down, Resources...) may pass: the job waits, saying it.
FINAL_REASONS = frozenset({"BadConstraints", "PartitionConfig", "PartitionTimeLimit"})


def is_final_refusal(error: str) -> bool:
    """Whether sbatch's refusal is about the job as asked against the partition as configured (it
    would refuse it again every time), not a passing failure (a timeout, a busy controller)."""
    return any(known in error for known in t.REFUSALS)


def final_reason(job: SlurmJob, ask: Ask, partition: PartitionUse) -> Message:
    """`Slurm cannot run the job (BadConstraints): <sentence>.` for a job held with a final reason."""
    words = t.REASONS.get(job.reason)
    sentence = _sentence(words, ask, partition) if words else Message.of("slurm.reason.other", code=job.reason)
    return Message.of("slurm.cannot_run", code=job.reason, sentence=sentence)


def refusal_reason(error: str, ask: Ask, partition: PartitionUse) -> Message:
    """`Slurm refuses the job (<what sbatch said>): <sentence>.`"""
    said = error.removeprefix("sbatch: ").removeprefix("Batch job submission failed: ").strip()
    words = next((text for known, text in t.REFUSALS.items() if known in said), None)
    return Message.of(
        "slurm.refuses",
        said=said,
        sentence=_sentence(words, ask, partition) if words else Message.of("slurm.refusal.other"),
    )


def pending_reason(job: SlurmJob, ask: Ask, partition: PartitionUse, now: datetime) -> Message:
    """`Waiting in Slurm (Resources): <sentence>; Slurm expects it to start at <time>.`"""
    words = t.REASONS.get(job.reason)
    sentence = (
        _sentence(words, ask, partition) if words else Message.of("slurm.reason.other", code=job.reason or "unknown")
    )
    start = expected_start(job, now)
    if start is not None:
        return Message.of("slurm.waiting_until", code=job.reason, sentence=sentence, time=f"{start:%Y-%m-%d %H:%M} UTC")
    return Message.of("slurm.waiting", code=job.reason, sentence=sentence)


def expected_start(job: SlurmJob, now: datetime) -> datetime | None:
    """When Slurm expects the pending job to start (its backfill plan: `squeue --start`), or None
    when it names no time it means (none, past, or its far-off placeholder)."""
    start = job.expected_start
    return start if start is not None and now < start < now + EXPECTED_START_HORIZON else None
