"""What squeue and sinfo say, parsed: the portal's jobs in Slurm and the partitions' nodes."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import UTC, datetime

from clusters.slurm.commands import is_portal_job

ACTIVE_STATES = {
    "PENDING",
    "CONFIGURING",
    "RUNNING",
    "COMPLETING",
    "SUSPENDED",
    "REQUEUED",
    "REQUEUE_HOLD",
    "REQUEUE_FED",
    "RESIZING",
    "SIGNALING",
    "STAGE_OUT",
    "STOPPED",
}
# Most telling first: the state a heterogeneous job shows when its components differ.
STATE_ORDER = ["NODE_FAIL", "OUT_OF_MEMORY", "PREEMPTED", "BOOT_FAIL", "TIMEOUT", "DEADLINE", "FAILED", "CANCELLED"]


@dataclass(frozen=True)
class SlurmJob:
    slurm_id: int  # the job id (a heterogeneous job's leader)
    name: str
    state: str
    reason: str
    expected_start: datetime | None  # Slurm's start time: expected while pending, actual after
    nodes: str
    partition: str

    @property
    def active(self) -> bool:
        return self.state in ACTIVE_STATES

    @property
    def pending(self) -> bool:
        return self.state == "PENDING"


def _time(text: str) -> datetime | None:
    """squeue prints times in the cluster's local time zone; the portal's machines run in UTC."""
    try:
        return datetime.fromisoformat(text).replace(tzinfo=UTC)
    except ValueError:
        return None  # N/A, Unknown


def _combined_state(states: list[str]) -> str:
    if "PENDING" in states:
        return "PENDING"
    if any(state in ACTIVE_STATES for state in states):
        return next(state for state in states if state in ACTIVE_STATES)
    for state in STATE_ORDER:
        if state in states:
            return state
    return states[0]


def parse_queue(text: str, prefix: str) -> dict[str, SlurmJob]:
    """squeue (commands.QUEUE_FORMAT) -> the portal's Slurm jobs (named `<prefix>-...`) by name, the
    newest job for a name when Slurm still knows several; a heterogeneous job's components as one."""
    components: dict[int, list[list[str]]] = {}
    for line in text.splitlines():
        fields = line.split("|")
        if len(fields) != 7 or not is_portal_job(fields[1], prefix):
            continue
        leader = fields[0].split("+")[0].split("_")[0]
        if leader.isdigit():
            components.setdefault(int(leader), []).append(fields)
    jobs: dict[str, SlurmJob] = {}
    for slurm_id in sorted(components):
        rows = components[slurm_id]
        first = rows[0]
        reasons = [row[3] for row in rows if row[3] != "None"]
        jobs[first[1]] = SlurmJob(
            slurm_id=slurm_id,
            name=first[1],
            state=_combined_state([row[2] for row in rows]),
            reason=reasons[0] if reasons else "None",
            expected_start=_time(first[4]),
            nodes=",".join(row[5] for row in rows if row[5]),
            partition=first[6],
        )
    return jobs


@dataclass(frozen=True)
class SlurmNode:
    name: str
    address: str
    partition: str
    cpus: int
    cpus_allocated: int
    memory_mb: int
    memory_allocated_mb: int
    gpus: dict[str, int] = field(default_factory=dict)  # GPU type ("" when untyped) -> count
    gpus_used: int = 0
    state: str = ""  # Slurm's long state: idle, mixed, allocated, drained, down*...
    reason: str = ""

    @property
    def gpu_count(self) -> int:
        return sum(self.gpus.values())

    @property
    def usable(self) -> bool:
        """Slurm would start jobs here (not down, drained, failing or unreachable)."""
        state = self.state.rstrip("*~#!%$@^-")
        return not self.state.endswith("*") and not any(
            word in state for word in ("down", "drain", "fail", "maint", "reserved", "unknown", "not_responding")
        )


GRES = re.compile(r"^gpu(?::([^:(]+))?:(\d+)")


def _gpus(gres: str) -> dict[str, int]:
    """`gpu:p100:4(S:0-1),gpu:v100:2` -> {"p100": 4, "v100": 2}; `gpu:2` -> {"": 2}."""
    found: dict[str, int] = {}
    for item in gres.split(","):
        match = GRES.match(item.strip())
        if match:
            found[match[1] or ""] = found.get(match[1] or "", 0) + int(match[2])
    return found


def _int(text: str) -> int:
    return int(text) if text.strip().isdigit() else 0


def parse_nodes(text: str) -> list[SlurmNode]:
    """sinfo --Node (commands.NODE_FORMAT) -> one SlurmNode per node and partition."""
    nodes = []
    for line in text.splitlines():
        fields = [value.strip() for value in line.split("|")]
        if len(fields) < 10 or not fields[0]:
            continue
        name, address, cpus_state, memory, allocated, gres, gres_used, state, partition, reason = fields[:10]
        cpu_counts = [_int(value) for value in cpus_state.split("/")]  # allocated/idle/other/total
        nodes.append(
            SlurmNode(
                name=name,
                address=address,
                partition=partition.rstrip("*"),  # the default partition is starred
                cpus=cpu_counts[3] if len(cpu_counts) == 4 else 0,
                cpus_allocated=cpu_counts[0] if cpu_counts else 0,
                memory_mb=_int(memory),
                memory_allocated_mb=_int(allocated),
                gpus=_gpus(gres),
                gpus_used=sum(_gpus(gres_used).values()),
                state=state,
                reason="" if reason == "none" else reason,
            )
        )
    return nodes
