"""The executor of Slurm nodes: tasks that Slurm placed, run by the task wrapper in their step.

Slurm allocates and starts a step per task (clusters/slurm/commands.py); the step's wrapper
(clusters/slurm/task.py) waits for its launch. This executor writes that launch: the same task
directory as the process executor's (supervise.json with the sandbox's command line, labels), plus
`launch/<task>.json` in the Slurm job's directory holding the task's environment, which the wrapper
hands to the supervisor. Exits are read back from the supervisor's `exit_code` as on a process
node. Whether the step itself still lives is Slurm's to say: the scheduler's Slurm pass reads it
from squeue for all jobs at once, so poll() never calls Slurm.

Limits are Slurm's (its cgroups on a real cluster), so no cgroup of the portal's is made here.
The job directory must be on a filesystem the portal and every node share.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from clusters.executors.base import ResourceSample, TaskHandle, TaskStatus
from clusters.executors.process import ProcessExecutor
from clusters.slurm.task import CANCELLED_FILE

LAUNCH_DIR = "launch"
STOP_FILE = "stop"  # in a task directory: the wrapper stops the task


def launch_file(task_dir: Path) -> Path:
    """`<job dir>/launch/<role>-<index>-<task attempt>.json`, which the wrapper of that task waits for."""
    return task_dir.parent / LAUNCH_DIR / f"{task_dir.name}.json"


class SlurmTaskExecutor(ProcessExecutor):
    def __init__(self, work_root: Path, address: str, **options: object):
        super().__init__(work_root, address, use_cgroups=False, **options)  # type: ignore[arg-type]

    def _started(self, task_dir: Path) -> bool:
        return launch_file(task_dir).exists()

    def _spawn(self, executor_id: str, task_dir: Path, env: dict[str, str]) -> None:
        target = launch_file(task_dir)
        target.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        partial = target.with_suffix(".tmp")
        # The environment holds the job's secrets: readable by the portal's user only.
        fd = os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w") as handle:
            json.dump({"task_dir": str(task_dir), "env": env}, handle)
        partial.replace(target)

    def poll(self, handle: TaskHandle) -> TaskStatus:
        if (self.work_root / handle.executor_id / CANCELLED_FILE).exists():
            return TaskStatus(running=True)  # Slurm ended it: the scheduler's Slurm pass says how
        return super().poll(handle)

    def _alive(self, executor_id: str, task_dir: Path) -> bool:
        return True  # until Slurm says its job ended (the scheduler's Slurm pass)

    def _kill(self, executor_id: str, task_dir: Path) -> None:
        if task_dir.is_dir():
            (task_dir / STOP_FILE).touch()

    def sample(self, handles: list[TaskHandle]) -> dict[str, ResourceSample]:
        return {}  # Slurm's accounting has it (sstat); not read here
