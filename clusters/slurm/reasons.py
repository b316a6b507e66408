"""Why Slurm keeps a job pending, in the portal's words, with the numbers behind it."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

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


def _asks(ask: Ask) -> str:
    return f"{ask.tasks} task(s): {ask.gpus} GPU(s), {ask.cpus} CPU(s), {ask.memory_mb} MB"


# Slurm's reason code -> the sentence (formatted with the job's ask and the partition's use).
WORDS = {
    "Resources": "Slurm waits for resources in partition {p.name}: the job asks for {asks}; free now: "
    "{p.free_gpus} of {p.gpus} GPU(s), {p.free_cpus} of {p.cpus} CPU(s), {p.free_memory_mb} MB",
    "Priority": "Slurm runs jobs of higher priority in partition {p.name} first (it asks for {asks}; free now: "
    "{p.free_gpus} GPU(s), {p.free_cpus} CPU(s))",
    "PartitionConfig": "partition {p.name} can never hold this job as configured: it asks for {asks}; the "
    "partition has {p.nodes} node(s) with {p.gpus} GPU(s), {p.cpus} CPU(s), {p.memory_mb} MB in all",
    "PartitionNodeLimit": "the job needs more nodes than partition {p.name} allows one job ({p.nodes} node(s))",
    "PartitionTimeLimit": "the job's time limit exceeds partition {p.name}'s",
    "PartitionDown": "partition {p.name} is down",
    "PartitionInactive": "partition {p.name} is inactive",
    "ReqNodeNotAvail": "nodes the job needs in partition {p.name} are unavailable (down, drained or reserved)",
    "NodeDown": "a node the job needs in partition {p.name} is down",
    "QOSMaxGRESPerUser": "your QOS limits how many GPUs one user may hold at once (the job asks for {ask.gpus})",
    "QOSMaxCpuPerUserLimit": "your QOS limits how many CPUs one user may hold at once (the job asks for {ask.cpus})",
    "QOSMaxJobsPerUserLimit": "your QOS limits how many jobs one user may run at once",
    "QOSMaxNodePerUserLimit": "your QOS limits how many nodes one user may hold at once",
    "QOSGrpGRES": "the QOS's GPUs are all in use (the job asks for {ask.gpus})",
    "QOSGrpCpuLimit": "the QOS's CPUs are all in use (the job asks for {ask.cpus})",
    "AssocGrpGRES": "your account's GPU limit is reached (the job asks for {ask.gpus})",
    "AssocGrpCpuLimit": "your account's CPU limit is reached (the job asks for {ask.cpus})",
    "AssocMaxJobsLimit": "your account may run no more jobs at once",
    "JobHeldAdmin": "a Slurm administrator holds the job",
    "JobHeldUser": "the job is held in Slurm",
    "BeginTime": "the job's start time has not come yet",
    "Dependency": "the job waits for another Slurm job",
    "None": "Slurm has not looked at the job yet",
    "BadConstraints": "no node of partition {p.name} can ever hold the job's tasks as asked ({asks}); the "
    "partition has {p.nodes} node(s) with {p.gpus} GPU(s), {p.cpus} CPU(s), {p.memory_mb} MB in all",
}

# Slurm's reason codes for a job it will never run as asked, whatever frees up (its request
# exceeds what the partition's nodes or limits are configured with): the portal ends the job
# FAILED with the reason instead of leaving it pending (or submitting it again) forever. Every
# other reason (ReqNodeNotAvail, NodeDown, PartitionNodeLimit, which Slurm also gives while nodes
# are down, Resources...) may pass: the job waits, saying it.
FINAL_REASONS = frozenset({"BadConstraints", "PartitionConfig", "PartitionTimeLimit"})


# What sbatch says when it refuses a job outright -> the sentence, as for a reason code.
REFUSALS = {
    "Requested node configuration is not available": "no node of partition {p.name} can hold the job's tasks as "
    "asked ({asks}); the partition has {p.nodes} node(s) with {p.gpus} GPU(s), {p.cpus} CPU(s), {p.memory_mb} MB "
    "in all",
    "Invalid generic resource (gres) specification": "partition {p.name} has no GPUs of the type the job asks for",
    "Invalid partition name specified": "Slurm has no partition {p.name}",
    "Node count specification invalid": "the job needs more nodes than partition {p.name} has ({p.nodes})",
    "Memory required by task is not available": "no node of partition {p.name} has the memory a task asks for",
}


def is_final_refusal(error: str) -> bool:
    """Whether sbatch's refusal is about the job as asked against the partition as configured (it
    would refuse it again every time), not a passing failure (a timeout, a busy controller)."""
    return any(known in error for known in REFUSALS)


def final_reason(job: SlurmJob, ask: Ask, partition: PartitionUse) -> str:
    """`Slurm cannot run the job (BadConstraints): <sentence>.` for a job held with a final reason."""
    words = WORDS.get(job.reason)
    sentence = words.format(p=partition, ask=ask, asks=_asks(ask)) if words else f"Slurm's reason: {job.reason}"
    return f"Slurm cannot run the job ({job.reason}): {sentence}."


def refusal_reason(error: str, ask: Ask, partition: PartitionUse) -> str:
    """`Slurm refuses the job (<what sbatch said>): <sentence>.`"""
    said = error.removeprefix("sbatch: ").removeprefix("Batch job submission failed: ").strip()
    words = next((text for known, text in REFUSALS.items() if known in said), None)
    sentence = words.format(p=partition, ask=ask, asks=_asks(ask)) if words else "see Slurm's words"
    return f"Slurm refuses the job ({said}): {sentence}."


def pending_reason(job: SlurmJob, ask: Ask, partition: PartitionUse, now: datetime) -> str:
    """`Waiting in Slurm (Resources): <sentence>; Slurm expects it to start at <time>`."""
    words = WORDS.get(job.reason)
    sentence = (
        words.format(p=partition, ask=ask, asks=_asks(ask)) if words else f"Slurm's reason: {job.reason or 'unknown'}"
    )
    text = f"Waiting in Slurm ({job.reason}): {sentence}"
    start = job.expected_start
    if start is not None and now < start < now + EXPECTED_START_HORIZON:
        text += f"; Slurm expects it to start at {start:%Y-%m-%d %H:%M} UTC"
    return text + "."
