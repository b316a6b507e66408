"""Where a job's files lie: the one place that names them.

Each of the portal's roots holds one folder per job, `job-<id>`: the logs (PAI_LOG_DIR) and the
work roots below PAI_WORK_ROOT of the launch (`tasks`, a task's host work dir), the process
executor (`process`) and Slurm (`slurm`, shared with its nodes). Retention
(scheduling/retention.py) removes every folder `job_folders` lists, so a new place a job writes
goes here or is never removed. Pure: settings only, no models (the executors name their task
folders with `job_dir_name`).
"""

from __future__ import annotations

from pathlib import Path

from django.conf import settings

TASKS, PROCESS, SLURM = "tasks", "process", "slurm"  # the work roots below PAI_WORK_ROOT


def job_dir_name(job_id: int | str) -> str:
    """A job's folder below each root (`job_dir_name("*")`: a glob of them all)."""
    return f"job-{job_id}"


def work_root(kind: str) -> Path:
    return Path(settings.PAI_WORK_ROOT) / kind


def job_folders(job_id: int) -> list[tuple[Path, str]]:
    """(a portal-owned root, the job's folder below it) for every place a job writes files."""
    roots = [Path(settings.PAI_LOG_DIR), work_root(TASKS), work_root(PROCESS), work_root(SLURM)]
    return [(root, job_dir_name(job_id)) for root in roots]


def task_log(job_id: int, job_attempt: int, role: str, index: int, task_attempt: int) -> Path:
    """A task attempt's log (TaskLaunch.log_path), which the executors write."""
    return Path(settings.PAI_LOG_DIR) / job_dir_name(job_id) / str(job_attempt) / f"{role}-{index}-{task_attempt}.log"


def task_work_dir(job_id: int, role: str, index: int) -> Path:
    """A task's work dir on the host, the same through its attempts."""
    return work_root(TASKS) / job_dir_name(job_id) / f"{role}-{index}"


def slurm_job_dir(job_id: int, attempt: int) -> Path:
    """A Slurm job's directory: the same as its tasks' under the Slurm executors' work root."""
    return work_root(SLURM) / job_dir_name(job_id) / str(attempt)
