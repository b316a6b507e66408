"""CPU, memory and process-count limits for process tasks, as Docker nodes apply them.

Two ways, chosen per node when its executor is made:
- cgroup (v1 `memory`, `cpu`, `pids` controllers, writable by the portal: root on a machine that
  mounts them, like this project's machines): one cgroup per task under the portal's own, with
  memoryMB (no swap), cpuNumber CPUs of time (CFS quota) and at most PAI_TASK_PIDS_LIMIT processes.
  The kernel's OOM kill is read back, so an out-of-memory task reads -1200 as on Docker.
- rlimit, the fallback elsewhere (cgroup v2 machines, a portal that is not root): the task's
  data segment is capped at memoryMB (RLIMIT_DATA, so allocations fail instead of an OOM kill),
  processes with RLIMIT_NPROC (counted per uid: all sandboxed tasks share it); CPU is not limited.

Light standard-library modules only: the supervisor, which starts with every task, imports this
module (a task's start pays for every import here).
"""

from __future__ import annotations

import contextlib
import os
import resource
import signal
import time

CGROUP_V1_ROOT = "/sys/fs/cgroup"
CONTROLLERS = ("memory", "cpu", "pids")
TASKS_GROUP = "pai-tasks"
CFS_PERIOD_US = 100_000
DEFAULT_PIDS_LIMIT = 4096


class TaskCgroup:
    def __init__(self, dirs: dict[str, str]):
        self.dirs = dirs  # controller -> the task's cgroup directory

    def join(self, pid: int) -> None:
        for directory in self.dirs.values():
            _write(os.path.join(directory, "cgroup.procs"), str(pid))

    def members(self) -> set[int]:
        pids: set[int] = set()
        for directory in self.dirs.values():
            try:
                with open(os.path.join(directory, "cgroup.procs")) as procs:
                    pids.update(int(line) for line in procs.read().split())
            except OSError:
                pass
        return pids

    def signal_all(self, sig: int) -> None:
        for pid in self.members():
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, sig)

    def oom_killed(self) -> bool:
        directory = self.dirs.get("memory")
        if not directory:
            return False
        try:
            with open(os.path.join(directory, "memory.oom_control")) as control:
                lines = control.read().splitlines()
        except OSError:
            return False
        counts = dict(line.split() for line in lines if len(line.split()) == 2)
        return int(counts.get("oom_kill", "0")) > 0

    def remove(self, timeout: float = 5.0) -> None:
        """Kill what is left in it, then remove it (a cgroup goes only once empty). Looked at again
        1 ms after the first kill, then at doubling intervals: the sandbox's last processes are
        still leaving when its bwrap has been reaped, gone ~1 ms later; a fixed 20 ms between looks
        made every sandboxed task's exit wait that much before it was recorded."""
        deadline = time.monotonic() + timeout
        pause = 0.001
        while self.members() and time.monotonic() < deadline:
            self.signal_all(signal.SIGKILL)
            time.sleep(pause)
            pause = min(pause * 2, 0.02)
        for directory in self.dirs.values():
            with contextlib.suppress(OSError):  # gone already, or still busy: nothing more to do
                os.rmdir(directory)


class CgroupLimits:
    """Makes one cgroup per task under `parents` (controller -> the portal's pai-tasks group)."""

    def __init__(self, parents: dict[str, str]):
        self.parents = parents

    @classmethod
    def detect(cls, root: str = CGROUP_V1_ROOT) -> CgroupLimits | None:
        """The cgroup v1 controllers under the portal's own cgroups, if it may create groups there."""
        own = _own_cgroups()
        parents = {}
        for controller in CONTROLLERS:
            mount = os.path.join(root, controller)
            if controller not in own or not os.path.isfile(os.path.join(mount, "cgroup.procs")):
                return None
            parent = os.path.join(mount, own[controller].lstrip("/"), TASKS_GROUP)
            try:
                os.makedirs(parent, exist_ok=True)
            except OSError:
                return None
            parents[controller] = parent
        return cls(parents)

    def create(self, key: str, *, cpu: int, memory_mb: int, pids: int) -> TaskCgroup:
        import hashlib  # here, not at the top: the supervisor imports this module and never needs it

        name = "task-" + hashlib.sha256(key.encode()).hexdigest()[:20]
        dirs = {controller: os.path.join(parent, name) for controller, parent in self.parents.items()}
        for directory in dirs.values():
            os.makedirs(directory, exist_ok=True)
        memory = str(memory_mb * 1024 * 1024)
        _write(os.path.join(dirs["memory"], "memory.limit_in_bytes"), memory)
        swap = os.path.join(dirs["memory"], "memory.memsw.limit_in_bytes")
        if os.path.exists(swap):  # memory + swap = memory: no swap, as on Docker nodes
            _write(swap, memory)
        _write(os.path.join(dirs["cpu"], "cpu.cfs_period_us"), str(CFS_PERIOD_US))
        _write(os.path.join(dirs["cpu"], "cpu.cfs_quota_us"), str(max(cpu, 1) * CFS_PERIOD_US))
        _write(os.path.join(dirs["pids"], "pids.max"), str(pids))
        return TaskCgroup(dirs)


def rlimits(*, memory_mb: int, pids: int) -> dict[str, int]:
    """The fallback's limits by RLIMIT_ name, applied with apply_rlimits() in the task's process."""
    return {"DATA": memory_mb * 1024 * 1024, "NPROC": pids}


def apply_rlimits(limits: dict[str, int]) -> None:
    for name, value in limits.items():
        resource.setrlimit(getattr(resource, f"RLIMIT_{name}"), (value, value))


def _own_cgroups() -> dict[str, str]:
    """controller -> this process's cgroup path, from /proc/self/cgroup (v1 lines)."""
    paths: dict[str, str] = {}
    try:
        with open("/proc/self/cgroup") as own:
            lines = own.read().splitlines()
    except OSError:
        return paths
    for line in lines:
        _, controllers, path = line.split(":", 2)
        for controller in controllers.split(","):
            if controller:
                paths[controller] = path
    return paths


def _write(path: str, text: str) -> None:
    with open(path, "w") as file:
        file.write(text)
