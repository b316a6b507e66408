"""The executors of Slurm nodes: tasks that Slurm placed, each held by the task wrapper in its step.

Slurm allocates and starts a step per task (clusters/slurm/commands.py); the step's wrapper
(clusters/slurm/task.py) says where it landed and waits for its launch, `launch/<task>.json` in the
Slurm job's directory, written here. What runs depends on the node:

- A node without a Docker engine (SlurmTaskExecutor): the task runs as a sandboxed process. The
  task directory is the process executor's (supervise.json with the sandbox's command line,
  labels); the launch holds the task's environment and script, which the wrapper hands to the
  supervisor (the launch file is the portal user's alone, 0600 in a 0700 directory).
  Exits are read back from the supervisor's `exit_code` as on a process node.
- A node whose Node row names a Docker engine (SlurmContainerExecutor): the task runs as a
  container of the job's image on that engine, made by the Docker executor itself (same spec,
  sshd, logs, limits, adoption after a restart), on the node's own network, so the ports the step
  found free are the task's. The portal talks to the engine; the step only holds the allocation:
  the launch names the container, and the wrapper waits until the attempt is over (the portal
  writes the container's `exit_code` into the task directory when it sees the exit, or a `stop`
  file, or the next attempt's launch). On SIGTERM (scancel, time limit) the wrapper stops the
  container through the engine itself, so it goes with the allocation even while the portal is
  down; the portal removes it once it has recorded the exit.

Whether the step itself still lives is Slurm's to say: the scheduler's Slurm pass reads it from
squeue for all jobs at once, so poll() never calls Slurm. Process tasks' limits are Slurm's (its
cgroups on a real cluster); containers get the Docker executor's. The job directory must be on a
filesystem the portal and every node share.
"""

from __future__ import annotations

import json
from pathlib import Path

import requests
from docker.errors import APIError, DockerException

from clusters.executors.base import ResourceSample, RunningTask, TaskHandle, TaskLaunch, TaskStatus
from clusters.executors.docker import DockerExecutor
from clusters.executors.process import ProcessExecutor
from clusters.job_files import job_dir_name
from clusters.slurm.task import CANCELLED_FILE, EXIT_FILE, STOP_FILE, write_file

LAUNCH_DIR = "launch"


def launch_file(task_dir: Path) -> Path:
    """`<job dir>/launch/<role>-<index>-<task attempt>.json`, which the wrapper of that task waits for."""
    return task_dir.parent / LAUNCH_DIR / f"{task_dir.name}.json"


def task_dir_of(work_root: Path, labels: dict[str, str]) -> Path:
    """`<work root>/job-<id>/<job attempt>/<role>-<index>-<task attempt>`, from a task's labels."""
    return (
        work_root
        / job_dir_name(labels["pai.job-id"])
        / labels["pai.job-attempt"]
        / f"{labels['pai.role']}-{labels['pai.index']}-{labels['pai.task-attempt']}"
    )


def write_launch(task_dir: Path, launch: dict[str, object]) -> None:
    """Written whole or not at all, readable by the portal's user only (it may hold the job's secrets)."""
    write_file(str(launch_file(task_dir)), json.dumps(launch), mode=0o600, dir_mode=0o700)


class SlurmTaskExecutor(ProcessExecutor):
    """A Slurm node without a Docker engine: each task a sandboxed process in its step."""

    def __init__(self, work_root: Path, address: str, **options: object):
        super().__init__(work_root, address, use_cgroups=False, **options)  # type: ignore[arg-type]

    def _started(self, task_dir: Path) -> bool:
        return launch_file(task_dir).exists()

    def _spawn(self, executor_id: str, task_dir: Path, env: dict[str, str], script: str) -> None:
        write_launch(task_dir, {"task_dir": str(task_dir), "env": env, "script": script})

    def poll(self, handle: TaskHandle) -> TaskStatus:
        if (self.work_root / handle.executor_id / CANCELLED_FILE).exists():
            return TaskStatus(running=True)  # Slurm ended it: the scheduler's Slurm pass says how
        return super().poll(handle)

    def _alive(self, executor_id: str, task_dir: Path) -> bool:
        return True  # until Slurm says its job ended (the scheduler's Slurm pass)

    def _signal_stop(self, task_dir: Path) -> None:
        """The portal's stop (a user's, a time limit's) goes through the task's wrapper: it signals
        the supervisor, which passes the SIGTERM on and kills after the grace written beside it.
        Slurm's scancel comes once the task has ended, or its grace is over."""
        self._kill("", task_dir)

    def _kill(self, executor_id: str, task_dir: Path) -> None:
        if task_dir.is_dir():
            (task_dir / STOP_FILE).touch()

    def sample(self, handles: list[TaskHandle]) -> dict[str, ResourceSample]:
        return {}  # Slurm's accounting has it (sstat); not read here


class SlurmContainerExecutor(DockerExecutor):
    """A Slurm node with a Docker engine: each task a container of the job's image, its step held
    by the wrapper until the container has ended."""

    def __init__(self, work_root: Path, docker_url: str, *, address: str, **options: object):
        super().__init__(docker_url, address=address, **options)  # type: ignore[arg-type]
        self.work_root = Path(work_root)
        self._task_dirs: dict[str, Path] = {}  # container id -> its task directory

    def start(self, launch: TaskLaunch) -> TaskHandle:
        # (On the node's own network, TaskLaunch.host_network: the step found its ports free there.)
        task_dir = task_dir_of(self.work_root, launch.labels)
        task_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
        # The launch before the container: a restart in between starts (or adopts) it again, and
        # the wrapper already knows which container to stop should Slurm end the step.
        write_launch(
            task_dir,
            {"task_dir": str(task_dir), "container": self.container_name(launch), "engine": self.docker_url or ""},
        )
        handle = super().start(launch)
        self._task_dirs[handle.executor_id] = task_dir
        return handle

    def _task_dir(self, container_id: str) -> Path | None:
        if container_id not in self._task_dirs:
            try:
                labels = self.api.inspect_container(container_id)["Config"]["Labels"] or {}
                self._task_dirs[container_id] = task_dir_of(self.work_root, labels)
            except (APIError, requests.exceptions.RequestException, DockerException, KeyError):
                return None
        return self._task_dirs[container_id]

    def exits_seen(self, may_look_in_full: bool = True) -> set[str] | None:
        return None  # (a step Slurm cancelled ends its container too: each task is polled, as before)

    def poll(self, handle: TaskHandle) -> TaskStatus:
        task_dir = self._task_dir(handle.executor_id)
        if task_dir is not None and (task_dir / CANCELLED_FILE).exists():
            return TaskStatus(running=True)  # Slurm ended it: the scheduler's Slurm pass says how
        status = super().poll(handle)
        if not status.running and task_dir is not None and not (task_dir / EXIT_FILE).exists():
            # The wrapper ends the step (success) or waits for a retry.
            write_file(str(task_dir / EXIT_FILE), str(status.exit_code if status.exit_code is not None else 255))
        return status

    def stop(self, handle: TaskHandle, *, keep: bool = False) -> None:
        task_dir = self._task_dir(handle.executor_id)
        super().stop(handle, keep=keep)
        if task_dir is not None and task_dir.is_dir():
            (task_dir / STOP_FILE).touch()  # this attempt is over: the wrapper waits for a retry or its end
        self._task_dirs.pop(handle.executor_id, None)

    def list_running(self) -> list[RunningTask]:
        running = super().list_running()
        for task in running:
            if "pai.job-id" in task.labels:
                self._task_dirs.setdefault(task.handle.executor_id, task_dir_of(self.work_root, task.labels))
        return running
