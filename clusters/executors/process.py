"""The process executor: each task is a local process group running `bash -c`.

It exists so that the portal works on a machine with no Docker engine and so that the scheduler
can be tested fast. No isolation and no resource limits: the placement still accounts for them.

Each task gets a directory under the work root holding `task.json` (labels), `pid` and, once the
command has ended, `exit_code` written by a small wrapper. The wrapper, not the scheduler, records
the exit, so a scheduler restart loses nothing: reconcile reads these files back.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import time
from datetime import UTC, datetime
from pathlib import Path

from clusters.executors.base import (
    Executor,
    ExecutorError,
    Failure,
    ResourceSample,
    RunningTask,
    TaskHandle,
    TaskLaunch,
    TaskStatus,
)
from clusters.executors.stats import from_process_trees

# The wrapper runs the user's command in a child bash, then records its exit code atomically.
# The command travels in an environment variable that is unset before the user's code runs.
# It records its own pid first, so a scheduler killed right after starting it still finds it.
WRAPPER = r"""
echo $$ > "$1/pid"
cmd="$PAI_PORTAL_COMMAND"; unset PAI_PORTAL_COMMAND
bash -c "$cmd"
code=$?
echo "$code" > "$1/exit_code.tmp" && mv "$1/exit_code.tmp" "$1/exit_code"
exit "$code"
"""
MARKER = "pai-portal-task"
BASE_ENV_KEYS = ("PATH", "LANG", "LC_ALL", "TZ")


class ProcessExecutor(Executor):
    def __init__(self, work_root: Path, address: str = "127.0.0.1"):
        self.work_root = Path(work_root)
        self.address = address
        self._children: dict[str, subprocess.Popen[bytes]] = {}

    def _task_dir(self, launch: TaskLaunch) -> Path:
        return (
            self.work_root
            / f"job-{launch.job_id}"
            / str(launch.job_attempt)
            / f"{launch.hostname}-{launch.task_attempt}"
        )

    def start(self, launch: TaskLaunch) -> TaskHandle:
        task_dir = self._task_dir(launch)
        executor_id = str(task_dir.relative_to(self.work_root))
        if (task_dir / "pid").exists() or (task_dir / "exit_code").exists():
            # This very attempt was started already (the scheduler died before recording it).
            return TaskHandle(executor_id=executor_id, ip=self.address)
        task_dir.mkdir(parents=True, exist_ok=True)
        # Labels before the process, written whole or not at all: reconcile lists the task
        # whenever the process may exist.
        partial = task_dir / "task.json.tmp"
        partial.write_text(json.dumps(launch.labels))
        partial.replace(task_dir / "task.json")
        work_dir = Path(launch.work_dir)
        work_dir.mkdir(parents=True, exist_ok=True)
        launch.log_path.parent.mkdir(parents=True, exist_ok=True)
        env = {key: os.environ[key] for key in BASE_ENV_KEYS if key in os.environ}
        env.setdefault("PATH", "/usr/local/bin:/usr/bin:/bin")
        env["HOME"] = str(work_dir)
        env.update(launch.env)
        env.update(launch.secret_env)
        env["PAI_PORTAL_COMMAND"] = launch.command
        try:
            with open(launch.log_path, "ab") as log:
                child = subprocess.Popen(
                    ["bash", "-c", WRAPPER, MARKER, str(task_dir)],
                    cwd=work_dir,
                    env=env,
                    stdin=subprocess.DEVNULL,
                    stdout=log,
                    stderr=subprocess.STDOUT,
                    start_new_session=True,  # its own process group: stop kills the whole tree
                )
        except OSError as exc:
            raise ExecutorError(f"cannot start the task's process: {exc}", Failure.START_FAILED) from exc
        (task_dir / "pid").write_text(str(child.pid))
        self._children[executor_id] = child
        return TaskHandle(executor_id=executor_id, ip=self.address)

    def _pid(self, task_dir: Path) -> int | None:
        try:
            return int((task_dir / "pid").read_text())
        except (OSError, ValueError):
            return None

    def _alive(self, executor_id: str, task_dir: Path) -> bool:
        child = self._children.get(executor_id)
        if child is not None:
            return child.poll() is None  # also reaps the zombie
        pid = self._pid(task_dir)
        if pid is None:
            return False
        try:  # our task only if its command line names this task's directory (pids get reused)
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
            state = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[0]
        except (OSError, IndexError):
            return False
        if state == "Z":
            return False
        if not cmdline:  # the kernel briefly shows an empty command line (e.g. while it forks)
            return True
        args = cmdline.split(b"\0")
        return MARKER.encode() in args and str(task_dir).encode() in args

    def poll(self, handle: TaskHandle) -> TaskStatus:
        task_dir = self.work_root / handle.executor_id
        exit_file = task_dir / "exit_code"
        if exit_file.exists():
            self._reap(handle.executor_id)
            finished = datetime.fromtimestamp(exit_file.stat().st_mtime, tz=UTC)
            return TaskStatus(running=False, exit_code=int(exit_file.read_text().strip() or 255), finished_at=finished)
        if self._alive(handle.executor_id, task_dir):
            return TaskStatus(running=True)
        # Gone without an exit record: killed together with its wrapper (SIGKILL, OOM killer, reboot).
        child = self._children.pop(handle.executor_id, None)
        code = child.returncode if child is not None else None
        if code is not None and code < 0:
            return TaskStatus(running=False, exit_code=128 - code, finished_at=datetime.now(UTC))
        return TaskStatus(running=False, lost=True, failure=Failure.TASK_GONE, diagnostics="the task's process is gone")

    def sample(self, handles: list[TaskHandle]) -> dict[str, ResourceSample]:
        roots = {}
        for handle in handles:
            task_dir = self.work_root / handle.executor_id
            pid = self._pid(task_dir)
            # Not _alive(): that reaps children, which is the scheduler thread's business.
            if pid is not None and not (task_dir / "exit_code").exists():
                roots[handle.executor_id] = pid
        return from_process_trees(roots)

    def _reap(self, executor_id: str) -> None:
        child = self._children.pop(executor_id, None)
        if child is not None:
            with contextlib.suppress(subprocess.TimeoutExpired):
                child.wait(timeout=5)

    def stop(self, handle: TaskHandle, *, keep: bool = False) -> None:
        task_dir = self.work_root / handle.executor_id
        self._kill(handle.executor_id, task_dir)
        if not keep:  # forget it: reconcile no longer lists it
            (task_dir / "task.json").unlink(missing_ok=True)

    def _kill(self, executor_id: str, task_dir: Path) -> None:
        pid = self._pid(task_dir)
        if pid is None or not self._alive(executor_id, task_dir):
            self._reap(executor_id)
            return
        for sig, wait in ((signal.SIGTERM, 3.0), (signal.SIGKILL, 5.0)):
            try:
                os.killpg(pid, sig)
            except ProcessLookupError:
                break
            deadline = time.monotonic() + wait
            while time.monotonic() < deadline and _group_alive(pid):
                self._alive(executor_id, task_dir)  # reap our child so the group can vanish
                time.sleep(0.02)
            if not _group_alive(pid):
                break
        self._reap(executor_id)

    def list_running(self) -> list[RunningTask]:
        running = []
        for labels_file in self.work_root.glob("job-*/*/*/task.json"):
            task_dir = labels_file.parent
            executor_id = str(task_dir.relative_to(self.work_root))
            labels = json.loads(labels_file.read_text())
            running.append(RunningTask(handle=TaskHandle(executor_id=executor_id, ip=self.address), labels=labels))
        return running


def _group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
