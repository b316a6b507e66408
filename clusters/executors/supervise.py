"""A process task's supervisor: `python -m clusters.executors.supervise pai-portal-task <task dir>`.

One per task, in a session of its own, so it outlives a scheduler restart. It reads
`supervise.json` from the task directory, starts the task's command (the sandbox's command line)
inside the task's cgroup or under its rlimits, copies its stdout and stderr into the capped logs
(each apart, and both together in the order they came), and when the
command has ended records `exit_code` (and `oom_killed`) in the task directory: the scheduler
reads those back. Everything the command started ends with it.

SIGTERM (the executor's stop) passes SIGTERM on to the task's processes and SIGKILL after the
grace period. Standard library only: it runs with no Django, with the task's environment.
"""

from __future__ import annotations

import contextlib
import json
import os
import selectors
import signal
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

from clusters.executors.limits import TaskCgroup, apply_rlimits
from clusters.executors.logcap import STDERR, STDOUT, TaskLogs

LOG_DRAIN_S = 2.0
CHUNK_BYTES = 65536


class Supervisor:
    def __init__(self, task_dir: Path):
        self.task_dir = task_dir
        config: dict[str, Any] = json.loads((task_dir / "supervise.json").read_text())
        self.argv: list[str] = config["argv"]
        self.cwd: str = config["cwd"]
        self.log_path: str = config["log_path"]
        self.log_max_bytes: int = config["log_max_bytes"]
        self.stop_grace_s: int = config["stop_grace_s"]
        self.cgroup = TaskCgroup(config["cgroup"]) if config.get("cgroup") else None
        self.rlimits: dict[str, int] = config.get("rlimits") or {}
        self.sandboxed: bool = config["sandboxed"]
        self.child: subprocess.Popen[bytes] | None = None

    def _enter_limits(self) -> None:
        """Runs in the child between fork and exec (this process has no other thread yet)."""
        if self.cgroup is not None:
            self.cgroup.join(os.getpid())
        apply_rlimits(self.rlimits)

    def _kill_child_group(self, sig: int) -> None:
        if self.child is not None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.child.pid, sig)

    def _on_stop(self, signum: int, frame: Any) -> None:
        """SIGTERM to the task's own processes, so they may finish cleanly within the grace period.
        In the sandbox the child is bwrap itself: signalled, it would take the sandbox down at once."""
        if self.cgroup is None:
            self._kill_child_group(signal.SIGTERM)
        else:
            spared = {self.child.pid} if self.sandboxed and self.child is not None else set()
            for pid in self.cgroup.members() - spared:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGTERM)
        signal.alarm(self.stop_grace_s)

    def _on_grace_over(self, signum: int, frame: Any) -> None:
        if self.cgroup is not None:
            self.cgroup.signal_all(signal.SIGKILL)
        self._kill_child_group(signal.SIGKILL)

    def run(self) -> int:
        # Its own pid first, so a scheduler killed right after starting it still finds it.
        (self.task_dir / "pid").write_text(str(os.getpid()))
        signal.signal(signal.SIGTERM, self._on_stop)
        signal.signal(signal.SIGALRM, self._on_grace_over)
        logs = TaskLogs(self.log_path, self.log_max_bytes)
        try:
            self.child = subprocess.Popen(
                self.argv,
                cwd=self.cwd,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                bufsize=0,  # raw pipes: each read is one read(2) of what is there
                start_new_session=True,  # its own process group: a stop reaches all of it
                preexec_fn=self._enter_limits,
            )
        except OSError as exc:
            logs.write(STDERR, f"[pai-portal] cannot start the task: {exc}\n".encode())
            logs.close()
            self._record(127, oom_killed=False)
            return 127
        (self.task_dir / "child_pid").write_text(str(self.child.pid))
        assert self.child.stdout is not None and self.child.stderr is not None
        pipes = {self.child.stdout: STDOUT, self.child.stderr: STDERR}
        pump = threading.Thread(target=_copy, args=(pipes, logs), daemon=True)
        pump.start()
        code = self.child.wait()
        oom_killed = self.cgroup is not None and self.cgroup.oom_killed()
        if self.cgroup is not None:
            self.cgroup.remove()  # what the command left running ends with it
        pump.join(LOG_DRAIN_S)  # a leftover outside any cgroup may hold the pipe: do not wait for it
        logs.close()
        exit_code = 128 - code if code < 0 else code
        self._record(exit_code, oom_killed=oom_killed)
        return exit_code

    def _record(self, exit_code: int, *, oom_killed: bool) -> None:
        if oom_killed:
            (self.task_dir / "oom_killed").touch()
        partial = self.task_dir / "exit_code.tmp"
        partial.write_text(str(exit_code))
        partial.replace(self.task_dir / "exit_code")


def _copy(pipes: dict[Any, str], logs: TaskLogs) -> None:
    """Both pipes read as their output comes, so `all` keeps the order the task wrote in (as far
    as one reader of two pipes can tell it)."""
    with contextlib.suppress(OSError, ValueError), selectors.DefaultSelector() as selector:
        for pipe, stream in pipes.items():
            selector.register(pipe, selectors.EVENT_READ, stream)
        while selector.get_map():
            for key, _events in selector.select():
                if chunk := os.read(key.fd, CHUNK_BYTES):
                    logs.write(key.data, chunk)
                else:
                    selector.unregister(key.fileobj)


if __name__ == "__main__":
    sys.exit(Supervisor(Path(sys.argv[2])).run())
