"""A process task's supervisor: `python -m clusters.executors.supervise pai-portal-task <task dir>`.

One per task, in a session of its own, so it outlives a scheduler restart. It reads
`supervise.json` from the task directory, starts the task's command (the sandbox's command line)
inside the task's cgroup or under its rlimits, copies its output into the capped log, and when the
command has ended records `exit_code` (and `oom_killed`) in the task directory: the scheduler
reads those back. Everything the command started ends with it.

SIGTERM (the executor's stop) passes SIGTERM on to the task's processes and SIGKILL after the
grace period. It runs with no Django, with the task's environment, and starts with every task, so
it imports only light standard-library modules (no subprocess, threading, pathlib or dataclasses:
those imports cost more than the rest of a trivial task's start) and forks the command itself.
"""

from __future__ import annotations

import contextlib
import json
import os
import select
import signal
import sys
import time

from clusters.executors.limits import TaskCgroup, apply_rlimits
from clusters.executors.logcap import CappedLog

LOG_DRAIN_S = 2.0
# How often the output loop looks whether the command ended while something still holds its
# output open (a leftover outside any cgroup, on a node without a sandbox).
EXIT_CHECK_S = 0.5
EXEC_FAILED = 127


class Supervisor:
    def __init__(self, task_dir: str):
        self.task_dir = task_dir
        with open(os.path.join(task_dir, "supervise.json")) as file:
            config = json.load(file)
        self.argv: list[str] = config["argv"]
        self.cwd: str = config["cwd"]
        self.log_path: str = config["log_path"]
        self.log_max_bytes: int = config["log_max_bytes"]
        self.stop_grace_s: int = config["stop_grace_s"]
        self.cgroup = TaskCgroup(config["cgroup"]) if config.get("cgroup") else None
        self.rlimits: dict[str, int] = config.get("rlimits") or {}
        self.sandboxed: bool = config["sandboxed"]
        self.child_pid: int | None = None
        self.oom_killed = False

    def _kill_child_group(self, sig: int) -> None:
        if self.child_pid is not None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.child_pid, sig)

    def _on_stop(self, signum: int, frame: object) -> None:
        """SIGTERM to the task's own processes, so they may finish cleanly within the grace period.
        In the sandbox the child is bwrap itself: signalled, it would take the sandbox down at once."""
        if self.cgroup is None:
            self._kill_child_group(signal.SIGTERM)
        else:
            spared = {self.child_pid} if self.sandboxed and self.child_pid is not None else set()
            for pid in self.cgroup.members() - spared:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGTERM)
        signal.alarm(self.stop_grace_s)

    def _on_grace_over(self, signum: int, frame: object) -> None:
        if self.cgroup is not None:
            self.cgroup.signal_all(signal.SIGKILL)
        self._kill_child_group(signal.SIGKILL)

    def run(self) -> int:
        # Its own pid first, so a scheduler killed right after starting it still finds it.
        self._write("pid", str(os.getpid()))
        signal.signal(signal.SIGTERM, self._on_stop)
        signal.signal(signal.SIGALRM, self._on_grace_over)
        log = CappedLog(self.log_path, self.log_max_bytes)
        output, child_output = os.pipe()
        pid = os.fork()
        if pid == 0:
            os.close(output)
            self._exec_command(child_output)
        os.close(child_output)
        self.child_pid = pid
        self._write("child_pid", str(pid))
        status = self._copy_output(output, log)
        os.close(output)
        log.close()
        if status is None:
            status = self._command_ended(os.waitpid(pid, 0)[1])
        code = os.waitstatus_to_exitcode(status)
        exit_code = 128 - code if code < 0 else code
        self._record(exit_code)
        return exit_code

    def _exec_command(self, output: int) -> None:
        """In the forked child: its own session (a stop reaches all of it), the task's limits, the
        output pipe as stdout and stderr, then the command. Never returns."""
        try:
            signal.signal(signal.SIGTERM, signal.SIG_DFL)
            signal.signal(signal.SIGALRM, signal.SIG_DFL)
            os.setsid()
            if self.cgroup is not None:
                self.cgroup.join(os.getpid())
            apply_rlimits(self.rlimits)
            stdin = os.open(os.devnull, os.O_RDONLY)
            os.dup2(stdin, 0)
            os.dup2(output, 1)
            os.dup2(output, 2)
            os.chdir(self.cwd)
            os.execvp(self.argv[0], self.argv)  # noqa: S606  (the sandbox command line, no shell)
        except (OSError, ValueError) as exc:  # (ValueError: a limit the kernel refuses)
            os.write(2, f"[pai-portal] cannot start the task: {exc}\n".encode())
        finally:
            os._exit(EXEC_FAILED)

    def _copy_output(self, output: int, log: CappedLog) -> int | None:
        """Copies the command's output into the log until nothing holds the pipe any more, or until
        LOG_DRAIN_S after the command ended (what it left running is then killed with its cgroup).
        Returns the command's wait status when it was collected here."""
        status: int | None = None
        drain_until = 0.0
        while True:
            timeout = EXIT_CHECK_S if status is None else max(0.0, drain_until - time.monotonic())
            if select.select([output], [], [], timeout)[0]:
                chunk = os.read(output, 65536)
                if not chunk:
                    return status
                log.write(chunk)
                continue
            if status is not None:
                return status  # drained long enough: a leftover outside any cgroup holds the pipe
            assert self.child_pid is not None
            ended, wait_status = os.waitpid(self.child_pid, os.WNOHANG)
            if ended:
                status = self._command_ended(wait_status)
                drain_until = time.monotonic() + LOG_DRAIN_S

    def _command_ended(self, status: int) -> int:
        self.oom_killed = self.cgroup is not None and self.cgroup.oom_killed()
        if self.cgroup is not None:
            self.cgroup.remove()  # what the command left running ends with it
        return status

    def _record(self, exit_code: int) -> None:
        if self.oom_killed:
            self._write("oom_killed", "")
        self._write("exit_code.tmp", str(exit_code))
        os.replace(os.path.join(self.task_dir, "exit_code.tmp"), os.path.join(self.task_dir, "exit_code"))

    def _write(self, name: str, text: str) -> None:
        with open(os.path.join(self.task_dir, name), "w") as file:
            file.write(text)


if __name__ == "__main__":
    sys.exit(Supervisor(sys.argv[2]).run())
