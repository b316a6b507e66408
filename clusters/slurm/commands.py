"""The Slurm command lines the portal runs, and the batch script of a portal job.

One portal job attempt is one Slurm job named `<prefix>-<job id>-<attempt>` (the prefix is the
portal's own, PAI_SLURM_JOB_PREFIX, so a restarted scheduler finds it again instead of submitting
twice, and portals sharing a Slurm cluster never take each other's jobs): a heterogeneous job with
one component per task role when the job has several roles (each role's own CPUs, memory and
GPUs), a plain job otherwise. Its batch script starts one `srun` step per task, each with the
task's own resources, so Slurm hands each step its own GPUs (CUDA_VISIBLE_DEVICES) even where
tasks share a node. Each step runs the task wrapper (clusters/slurm/task.py), which tells the
portal where it landed and runs the task once the portal has written its launch.
"""

from __future__ import annotations

import math
import re
import shlex
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class RoleRequest:
    """One task role as Slurm is asked for it."""

    role: str
    instances: int
    cpu: int
    memory_mb: int
    gpu: int
    ports: int  # how many ports each task needs (its declared ones and its sshd's)


def job_name(prefix: str, job_id: int, attempt: int) -> str:
    return f"{prefix}-{job_id}-{attempt}"


def is_portal_job(name: str, prefix: str) -> bool:
    """One of this portal's Slurm jobs (not anybody else's in the partition)."""
    return re.fullmatch(rf"{re.escape(prefix)}-\d+-\d+", name) is not None


def job_of(name: str, prefix: str) -> tuple[int, int] | None:
    """(portal job id, attempt) of one of this portal's Slurm job names, else None."""
    match = re.fullmatch(rf"{re.escape(prefix)}-(\d+)-(\d+)", name)
    return (int(match[1]), int(match[2])) if match else None


def _cpus_and_memory(request: RoleRequest) -> list[str]:
    # Memory per CPU, since a heterogeneous job's components may not mix --mem and --mem-per-cpu.
    return [f"--cpus-per-task={request.cpu}", f"--mem-per-cpu={math.ceil(request.memory_mb / request.cpu)}"]


def _gpus(request: RoleRequest, gpu_type: str | None) -> str:
    """`[type:]count`, as --gpus-per-task and --gres=gpu: take it."""
    return f"{gpu_type.lower() + ':' if gpu_type else ''}{request.gpu}"


def _resources(request: RoleRequest, gpu_type: str | None) -> list[str]:
    return _cpus_and_memory(request) + ([f"--gpus-per-task={_gpus(request, gpu_type)}"] if request.gpu else [])


def sbatch_argv(
    *,
    partition: str,
    name: str,
    comment: str,
    roles: list[RoleRequest],
    gpu_type: str | None,
    job_dir: Path,
    time_limit: str | None = None,
    nice: int | None = None,
) -> list[str]:
    """`sbatch` for the job's whole gang: one component per role, separated by `:`. `time_limit`
    (`--time`, jobs.protocol.timelimit.slurm_time) and `nice` (`--nice`, its priority class:
    jobs.protocol.priority.slurm_nice) apply to the whole job."""
    argv = [
        "sbatch",
        "--parsable",
        f"--job-name={name}",
        f"--comment={comment}",
        f"--partition={partition}",
        f"--chdir={job_dir}",
        f"--output={job_dir / 'batch.log'}",
        # A job Slurm requeued would run again under the same id, behind the portal's back: the
        # portal sees NODE_FAIL or PREEMPTED instead and retries per the exit spec.
        "--no-requeue",
        *([f"--time={time_limit}"] if time_limit else []),
        *([f"--nice={nice}"] if nice is not None else []),
    ]
    for number, request in enumerate(roles):
        if number:
            argv.append(":")
        argv += [f"--ntasks={request.instances}", *_resources(request, gpu_type)]
    argv.append(str(job_dir / "batch.sh"))
    return argv


def batch_script(*, roles: list[RoleRequest], gpu_type: str | None, job_dir: Path, python: str, code_dir: Path) -> str:
    """One step per task, side by side; each step's own CPUs, memory and GPUs (`--exact`)."""
    lines = ["#!/bin/bash", "# Written by PAI Portal: one srun step per task; the task wrapper runs each task."]
    several = len(roles) > 1
    for group, request in enumerate(roles):
        for index in range(request.instances):
            step = [
                "srun",
                *([f"--het-group={group}"] if several else []),
                "--ntasks=1",
                "--nodes=1",
                "--exact",
                *_cpus_and_memory(request),
                *([f"--gres=gpu:{_gpus(request, gpu_type)}"] if request.gpu else []),
                f"--job-name={request.role}-{index}",
                f"--chdir={code_dir}",
                f"--output={job_dir / 'steps' / f'{request.role}-{index}.out'}",
                python,
                "-E",
                "-s",
                "-S",
                "-c",  # not `-m`: runpy's imports cost 3 ms more on the slot's critical path
                "from clusters.slurm.task import main; main()",
                str(job_dir),
                request.role,
                str(index),
                str(request.ports),
            ]
            lines.append(shlex.join(step) + " &")
    lines += ["wait", ""]
    return "\n".join(lines)


def squeue_argv(partitions: list[str]) -> list[str]:
    """Every job of these partitions Slurm still knows, finished ones included (for MinJobAge)."""
    return ["squeue", "--noheader", "--states=all", f"--partition={','.join(partitions)}", f"--format={QUEUE_FORMAT}"]


def sinfo_argv(partitions: list[str]) -> list[str]:
    return ["sinfo", "--noheader", "--Node", f"--partition={','.join(partitions)}", f"--Format={NODE_FORMAT}"]


def scancel_argv(slurm_ids: list[str]) -> list[str]:
    return ["scancel", *slurm_ids]


def scancel_by_name_argv(name: str) -> list[str]:
    return ["scancel", f"--name={name}"]


# %i: id ("12" or "12+1" for a heterogeneous job's component), %j name, %T state, %r reason,
# %S start time (expected, while pending), %N nodes, %P partition.
QUEUE_FORMAT = "%i|%j|%T|%r|%S|%N|%P"
NODE_FORMAT = "NodeList:|,NodeAddr:|,CPUsState:|,Memory:|,AllocMem:|,Gres:|,GresUsed:|,StateLong:|,Partition:|,Reason:|"
