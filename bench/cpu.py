"""CPU time, the figure a busy machine leaves comparable: wall times follow whatever else runs on
the box, the CPU a piece of work takes much less so.

- `TreeCpu`: everything this process and all it starts use (the process executor's supervisor
  server, each task's supervisor, bwrap, pasta, `ip`, the task itself), in a cpuacct cgroup of the
  bench's own (root, cgroup v1 with cpuacct mounted apart from cpu, as on the development box: the
  tasks' own cgroups are in the memory, cpu and pids hierarchies, so they stay counted here). None
  where that cannot be had: the figures then say n/a.
- `process_cpu(pids)`: user + system seconds of running processes and their children (the web
  server's workers), by psutil.
"""

from __future__ import annotations

import contextlib
import os
import time
import uuid
from pathlib import Path

CPUACCT = Path("/sys/fs/cgroup/cpuacct")
CPU = Path("/sys/fs/cgroup/cpu")


class TreeCpu:
    """A cpuacct cgroup holding this process (and, from now on, whatever it starts)."""

    def __init__(self, group: Path):
        self.group = group

    @classmethod
    def start(cls) -> TreeCpu | None:
        if os.geteuid() != 0 or not (CPUACCT / "cpuacct.usage").exists():
            return None
        with contextlib.suppress(OSError):
            if CPU.exists() and CPU.resolve() == CPUACCT.resolve():
                return None  # co-mounted with cpu: the tasks' cpu cgroups would take them out of ours
        group = CPUACCT / f"pai-bench-{os.getpid()}-{uuid.uuid4().hex[:6]}"
        try:
            group.mkdir()
            (group / "cgroup.procs").write_text(str(os.getpid()))
        except OSError:
            with contextlib.suppress(OSError):
                group.rmdir()
            return None
        return cls(group)

    def seconds(self) -> float:
        return int((self.group / "cpuacct.usage").read_text()) / 1e9

    def close(self, leftovers: list[int] | None = None) -> None:
        """This process back to the root group; `leftovers` (pids the bench started that may
        outlive it, such as an idle supervisor server) ended; the group removed once empty."""
        with contextlib.suppress(OSError):
            (CPUACCT / "cgroup.procs").write_text(str(os.getpid()))
        for pid in leftovers or []:
            with contextlib.suppress(OSError):
                os.kill(pid, 15)
        for _ in range(50):
            try:
                self.group.rmdir()
                return
            except OSError:
                time.sleep(0.1)


def process_cpu(pids: list[int]) -> float:
    """User + system seconds of these processes and their living children."""
    import psutil

    total = 0.0
    for pid in pids:
        try:
            process = psutil.Process(pid)
            for member in [process, *process.children(recursive=True)]:
                with contextlib.suppress(psutil.NoSuchProcess):
                    times = member.cpu_times()
                    total += times.user + times.system
        except psutil.NoSuchProcess:
            continue
    return total
