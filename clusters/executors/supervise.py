"""A process task's supervisor, and the node's supervisor server that forks one per task.

    python -m clusters.executors.supervise pai-portal-task <work root>

The server runs once per node (the process executor starts it on its first task; it ends after
SERVER_IDLE_S without a request, or when its work root goes). For each task the executor sends
it the task directory, environment and script over `<work root>/SOCKET_NAME` (the portal's
own directory: tasks never see it); it forks a supervisor in a session of its own, which outlives
a scheduler restart, writes its `pid` (with its start time, which tells it from a later process
with the same pid) and only then answers with that pid. A fork costs about a millisecond; a
Python interpreter started per task cost most of a trivial task's start.

The supervisor reads `supervise.json` from the task directory, starts the task's command (the
sandbox's command line) inside the task's cgroup or under its rlimits, with the task's script
(sent beside the environment, never written anywhere) on descriptor SCRIPT_FD (hand_script_over),
copies its stdout and stderr into the capped logs (each apart, and both together in the order they
came), and when the command has ended records `exit_code` (and `oom_killed`) in the task
directory: the scheduler reads those back. Everything the command started ends with it.

SIGTERM (the executor's stop) passes SIGTERM on, once, to the task's processes that run when it
comes (never to those started after it: what a trap starts to save the task's work runs to its end),
and SIGKILL to all of them after the grace period. No Django here: standard library only.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import math
import os
import select
import signal
import socket
import sys
import time
from collections.abc import Callable

from clusters.executors.limits import TaskCgroup, apply_rlimits
from clusters.executors.logcap import STDERR, STDOUT, TaskLogs
from clusters.executors.netns import BLOCK_FD, INFO_FD, Attached, NetworkError, attach, kill_on_failure, port_taken
from clusters.executors.rings import ring_listeners, socket_in

LOG_DRAIN_S = 2.0
CHUNK_BYTES = 65536
# How often the output loop looks whether the command ended while something still holds its
# output open (a leftover outside any cgroup, on a node without a sandbox).
EXIT_CHECK_S = 0.5
# While a stop has reached none of the task's command (it came as the sandbox was still starting
# it), how soon the output loop tries again: doubling from the first to EXIT_CHECK_S, so a command
# born just after the stop gets it within milliseconds (at EXIT_CHECK_S it waited up to half a
# second), and one that ignores SIGTERM for a long grace costs a look every half second.
PASS_ON_RETRY_S = 0.005
STOP_SIGNALS = (signal.SIGTERM, signal.SIGALRM)  # blocked across the fork of the task's command
EXEC_FAILED = 127
# When the task's network cannot be attached, its command never ran: the exit spec's codes, not SIGKILL's.
PORTS_TAKEN = 253  # ContainerPortConflict: pasta could not bind a declared port; placed again elsewhere
PORT_CONFLICT_FAILURE = "port-conflict"  # its `failure` file (executors.base.Failure.PORT_CONFLICT)
NETWORK_FAILED = -1201  # ContainerDockerCreationError: the sandbox could not be made
# Named for what a request holds: a server of an earlier version (which read the script from the
# environment) may still run through an upgrade; the new executor starts its own beside it, and the
# old one leaves once idle, its tasks running to their end.
SOCKET_NAME = "supervisor-v2.sock"
# In a task directory: the grace period (seconds) of a stop or preemption, written by the executor
# before its SIGTERM; without it the supervisor's own stop_grace_s.
GRACE_FILE = "stop_grace"
CLAIM_NAME = "supervised"  # in a task directory: a supervisor has taken it (or a start gave it up)
ALREADY_CLAIMED = 0
PASTA_PID_NAME = "pasta_pid"  # in a task directory: its pasta (record_process)
SERVER_PID_NAME = "supervisor.pid"  # the server's own pid (tools that look for leftover tasks skip it)
SERVER_IDLE_S = 30
SERVER_CHECK_S = 5  # how often an idle server looks whether its work root is still there
REQUEST_TIMEOUT_S = 10
# The task's script (rendered secrets included) reaches its bash on this descriptor, an in-memory
# file: never in an argv (any user's process list shows those), an environment or on a disk.
SCRIPT_FD = 3
# Put before the script's first line (so its line numbers stay): the script's bash has the script
# open on a descriptor of its own by then, and the task's processes inherit nothing of it.
SCRIPT_PROLOGUE = f"exec {SCRIPT_FD}<&-; "


class Supervisor:
    def __init__(self, task_dir: str | os.PathLike[str], *, portal_stop_file: str | None = None):
        self.task_dir = os.fspath(task_dir)
        # In a Slurm step (clusters/slurm/task.py): the file that says a SIGTERM is the portal's
        # stop. Slurm's own stops (scancel, its time limit, its preemption) signal every process
        # of the step, this one included: see _on_stop.
        self.portal_stop_file = portal_stop_file
        with open(os.path.join(task_dir, "supervise.json")) as file:
            config = json.load(file)
        self.argv: list[str] = config["argv"]
        self.cwd: str = config["cwd"]
        self.log_path: str = config["log_path"]
        self.log_max_bytes: int = config["log_max_bytes"]
        self.stop_grace_s: float = config["stop_grace_s"]
        self.cgroup = TaskCgroup(config["cgroup"]) if config.get("cgroup") else None
        self.rlimits: dict[str, int] = config.get("rlimits") or {}
        self.sandboxed: bool = config["sandboxed"]
        # Set: the sandbox has a network namespace of its own, attached here before it runs (netns.py).
        self.network: dict[str, object] | None = config.get("network")
        # Set: where the processes waiting for this node's exits listen (bells.py), rung once it is recorded.
        self.bells: str | None = config.get("bells")
        self.child_pid: int | None = None
        self.oom_killed = False
        self.stopping = False
        self.signalled: set[int] = set()  # the task's processes sent SIGTERM (and not ignoring it then)
        self.passed_on = False  # the stop has reached the task's command: nothing started later gets it
        self._woken = -1  # read end of a pipe a stop writes to: it wakes the output loop (_copy_output)
        self._wake = -1

    def _kill_child_group(self, sig: int) -> None:
        if self.child_pid is not None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.child_pid, sig)

    def _on_stop(self, signum: int, frame: object) -> None:
        """SIGTERM to the task's own processes, so they may finish cleanly within the grace period.
        In the sandbox the child is bwrap itself: signalled, it would take the sandbox down at once.
        (The task's pasta is no member of its cgroup: it carries the task's traffic to the end.)
        Only the first SIGTERM counts: a second one (a restarted scheduler's) moves no deadline.

        In a Slurm step only the portal's stop counts (the wrapper's SIGTERM once portal_stop_file
        is there). Slurm's own has reached every process of the step at once, and Slurm kills them
        after its KillWait: signalled again, what a trap started meanwhile would die."""
        if self.stopping:
            return
        if self.portal_stop_file is not None and not os.path.exists(self.portal_stop_file):
            return
        self.stopping = True
        if self._wake >= 0:
            with contextlib.suppress(OSError):  # (full: the loop is woken already)
                os.write(self._wake, b"!")
        grace = self.stop_grace_s
        with contextlib.suppress(OSError, ValueError), open(os.path.join(self.task_dir, GRACE_FILE)) as file:
            written = float(file.read().strip())
            if math.isfinite(written):
                grace = max(0.0, written)
        self._pass_stop_on()
        if grace > 0:  # (seconds, a fraction of one too: setitimer, where alarm took whole ones)
            signal.setitimer(signal.ITIMER_REAL, grace)
        else:
            self._on_grace_over(signal.SIGALRM, None)

    def _pass_stop_on(self) -> None:
        """SIGTERM to each of the task's processes that runs now, each after its parent (see
        parents_first), once: never to a process started after the stop came, as Docker,
        Kubernetes and Slurm signal once, so that what a trap starts to save the task's work
        (`trap 'python3 save.py; exit 0' TERM`) runs to its end within the grace period.

        Called again while the output is copied until the stop has reached a process that does not
        ignore SIGTERM: a stop that came while the sandbox was still starting the command reaches
        the command too. bwrap's own processes ignore it (see _exec_command) and count for nothing;
        the outer one is spared (signalled some other way, it would take the sandbox down at once)."""
        if self.passed_on or self.child_pid is None:
            return
        found = self.cgroup.members() if self.cgroup is not None else family(self.child_pid)
        spared = {self.child_pid} if self.sandboxed else set()
        for pid in parents_first(found - spared - self.signalled):
            ignoring = ignores_sigterm(pid)  # (read before the signal: bwrap's, or a command not yet started)
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGTERM)
                if not ignoring:
                    self.signalled.add(pid)
        self.passed_on = bool(self.signalled)

    def _on_grace_over(self, signum: int, frame: object) -> None:
        if self.cgroup is not None:
            self.cgroup.signal_all(signal.SIGKILL)
        self._kill_child_group(signal.SIGKILL)

    def run(self, started: Callable[[int], None] = lambda pid: None, *, script: str = "") -> int:
        if not claim(self.task_dir):
            return ALREADY_CLAIMED  # a second request for this attempt: the first one runs it
        # Its own pid first, so a scheduler killed right after starting it still finds it.
        record_process(os.path.join(self.task_dir, "pid"), os.getpid())
        started(os.getpid())
        signal.signal(signal.SIGTERM, self._on_stop)
        signal.signal(signal.SIGALRM, self._on_grace_over)
        logs = TaskLogs(self.log_path, self.log_max_bytes)
        self._woken, self._wake = os.pipe()  # (close-on-exec: the command inherits neither end)
        os.set_blocking(self._wake, False)
        stdout, child_stdout = os.pipe()
        stderr, child_stderr = os.pipe()
        # bwrap's pipes when the sandbox gets a network: it tells its pid, then waits to be let go.
        info, info_w = os.pipe() if self.network else (-1, -1)
        block, block_w = os.pipe() if self.network else (-1, -1)
        # A stop waits until the child's pid is known: in the sandbox the child is bwrap, which a
        # stop spares (signalled, it would leave its sandbox to be torn down after it has gone).
        signal.pthread_sigmask(signal.SIG_BLOCK, STOP_SIGNALS)
        pid = os.fork()
        if pid == 0:
            for parents_end in (stdout, stderr, info, block_w):
                if parents_end >= 0:
                    os.close(parents_end)
            self._exec_command(child_stdout, child_stderr, script, {INFO_FD: info_w, BLOCK_FD: block})
        for childs_end in (child_stdout, child_stderr, info_w, block):
            if childs_end >= 0:
                os.close(childs_end)
        self.child_pid = pid
        signal.pthread_sigmask(signal.SIG_UNBLOCK, STOP_SIGNALS)
        self._write("child_pid", str(pid))
        network, refused = self._attach_network(info, block_w, logs) if self.network else (None, None)
        try:
            status = self._copy_output({stdout: STDOUT, stderr: STDERR}, logs)
            woken, wake, self._woken, self._wake = self._woken, self._wake, -1, -1  # (before a stop could write)
            os.close(woken)
            os.close(wake)
            os.close(stdout)
            os.close(stderr)
            logs.close()
            if status is None:
                status = self._command_ended(os.waitpid(pid, 0)[1])
        except BaseException:
            if network is not None:
                network.close()  # no pasta outlives its task
            raise
        if network is not None:  # told to end now, waited for once the exit is recorded (netns.py)
            network.end()
        code = os.waitstatus_to_exitcode(status)
        exit_code = refused if refused is not None else 128 - code if code < 0 else code
        if refused == PORTS_TAKEN:  # (the platform's, not the task's own exit 253)
            self._write("failure", PORT_CONFLICT_FAILURE)
        self._record(exit_code)
        if self.bells:
            ring_listeners(self.bells)
        if network is not None:
            network.close()
        return exit_code

    def _attach_network(self, info: int, block: int, logs: TaskLogs) -> tuple[Attached | None, int | None]:
        """The sandbox's network, attached before its command runs; when that fails the sandbox
        is killed (never let go), the reason goes to the task's log, and the exit code to record
        is the platform's, not the SIGKILL's: the task's command never ran."""
        assert self.network is not None and self.child_pid is not None
        network = None
        try:
            # pasta's pid for the portal the moment it runs: it outlives a supervisor killed -9 (nothing
            # else ends it), killed while the network was still being attached too.
            network = attach(self.network, info, self._record_pasta)
            os.write(block, b"go")  # (EPIPE when bwrap has failed meanwhile)
            return network, None
        except (OSError, NetworkError) as exc:
            if network is not None:
                network.close()
            logs.write(STDERR, f"[pai-portal] cannot give the task its network: {exc}\n".encode())
            kill_on_failure(self.child_pid)
            return None, PORTS_TAKEN if port_taken(exc) else NETWORK_FAILED
        finally:
            os.close(info)
            os.close(block)

    def _record_pasta(self, pid: int) -> None:
        with contextlib.suppress(OSError):
            record_process(os.path.join(self.task_dir, PASTA_PID_NAME), pid)

    def _exec_command(self, stdout: int, stderr: int, script: str, placed: dict[int, int]) -> None:
        """In the forked child: its own session (a stop reaches all of it), the task's limits, the
        output pipes as stdout and stderr, the script on SCRIPT_FD, bwrap's pipes where its command
        line names them, then the command. Never returns."""
        try:
            # The sandbox's bwrap ignores SIGTERM: a stop is the task's own processes' to handle,
            # not bwrap's, whose death would take them down at once (whoever signals every process:
            # Slurm signals each one of its step). The sandbox takes the default back for the
            # task's command (Sandbox.argv).
            signal.signal(signal.SIGTERM, signal.SIG_IGN if self.sandboxed else signal.SIG_DFL)
            signal.signal(signal.SIGALRM, signal.SIG_DFL)
            signal.pthread_sigmask(signal.SIG_UNBLOCK, STOP_SIGNALS)  # (blocked by the parent for the fork)
            os.setsid()
            if self.cgroup is not None:
                self.cgroup.join(os.getpid())
            apply_rlimits(self.rlimits)
            stdin = os.open(os.devnull, os.O_RDONLY)
            os.dup2(stdin, 0)
            os.dup2(stdout, 1)
            os.dup2(stderr, 2)
            place_fds({target: fd for target, fd in placed.items() if fd >= 0})  # (before fd 3 is taken)
            hand_script_over(script)
            os.chdir(self.cwd)
            os.execvp(self.argv[0], self.argv)  # noqa: S606  (the sandbox command line, no shell)
        except (OSError, ValueError) as exc:  # (ValueError: a limit the kernel refuses)
            os.write(2, f"[pai-portal] cannot start the task: {exc}\n".encode())
        finally:
            os._exit(EXEC_FAILED)

    def _copy_output(self, pipes: dict[int, str], logs: TaskLogs) -> int | None:
        """Copies the command's stdout and stderr into the logs as they come (so `all` keeps the
        order the task wrote in, as far as one reader of two pipes can tell it) until nothing holds
        the pipes any more, or until LOG_DRAIN_S after the command ended (what it left running is
        then killed with its cgroup). Returns the command's wait status when it was collected here."""
        status: int | None = None
        drain_until = 0.0
        open_pipes = dict(pipes)
        retry = PASS_ON_RETRY_S
        while open_pipes:
            if self.stopping and status is None:
                self._pass_stop_on()
            timeout = EXIT_CHECK_S if status is None else max(0.0, drain_until - time.monotonic())
            if self.stopping and not self.passed_on and status is None:
                timeout, retry = min(timeout, retry), min(retry * 2, EXIT_CHECK_S)
            woken = [self._woken] if self._woken >= 0 else []
            ready = select.select(list(open_pipes) + woken, [], [], timeout)[0]
            if woken and woken[0] in ready:  # (a stop came: pass it on now, not after the timeout)
                os.read(woken[0], CHUNK_BYTES)
                ready.remove(woken[0])
                continue
            for pipe in ready:
                if chunk := os.read(pipe, CHUNK_BYTES):
                    logs.write(open_pipes[pipe], chunk)
                else:
                    del open_pipes[pipe]
            if ready:
                continue
            if status is not None:
                return status  # drained long enough: a leftover outside any cgroup holds the pipes
            assert self.child_pid is not None
            ended, wait_status = os.waitpid(self.child_pid, os.WNOHANG)
            if ended:
                status = self._command_ended(wait_status)
                drain_until = time.monotonic() + LOG_DRAIN_S
        return status

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


def hand_script_over(script: str) -> None:
    """The script, after SCRIPT_PROLOGUE, as an anonymous in-memory file open on SCRIPT_FD for the
    command about to be executed (`bash /dev/fd/3` opens it again: as the sandbox's uid too, since
    a memfd's mode lets anyone who holds it reopen it)."""
    memfd = os.memfd_create("pai-task-script", 0)
    data = (SCRIPT_PROLOGUE + script).encode()
    written = 0
    while written < len(data):
        written += os.write(memfd, data[written:])
    if memfd == SCRIPT_FD:
        os.set_inheritable(memfd, True)
    else:
        os.dup2(memfd, SCRIPT_FD)  # (inheritable)
        os.close(memfd)


def place_fds(placed: dict[int, int]) -> None:
    """Each descriptor at its target number (inheritable), none overwriting another first."""
    moved = {target: fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, 64) for target, fd in placed.items()}
    for target, fd in moved.items():
        os.dup2(fd, target)  # (inheritable)
        os.close(fd)


def claim(task_dir: str) -> bool:
    """Take the task directory for one supervisor, for good (False: taken already). The executor
    takes it too when it gives a start up, so that no supervisor can run the task afterwards."""
    try:
        os.close(os.open(os.path.join(task_dir, CLAIM_NAME), os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
    except FileExistsError:
        return False
    return True


def proc_stat(pid: int) -> list[str]:
    """/proc/<pid>/stat's fields after the command name: the state first (field 3)."""
    with open(f"/proc/{pid}/stat") as stat:
        return stat.read().rpartition(")")[2].split()


def family(pid: int) -> set[int]:
    """The process, its descendants and the members of its process group (where no cgroup holds
    a task's processes): one pass over /proc."""
    children: dict[int, list[int]] = {}
    group = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        with contextlib.suppress(OSError, IndexError, ValueError):
            stat = proc_stat(int(entry))
            children.setdefault(int(stat[1]), []).append(int(entry))
            if int(stat[2]) == pid:
                group.append(int(entry))
    found: set[int] = set()
    unseen = [pid, *group]
    while unseen:
        found.update(unseen)
        unseen = [child for parent in unseen for child in children.get(parent, ()) if child not in found]
    return found


def ignores_sigterm(pid: int) -> bool:
    """Whether the process ignores SIGTERM now (/proc/<pid>/status, SigIgn)."""
    try:
        with open(f"/proc/{pid}/status") as status:
            for line in status:
                if line.startswith("SigIgn:"):
                    return bool(int(line.split()[1], 16) >> (signal.SIGTERM - 1) & 1)
    except (OSError, ValueError, IndexError):
        pass
    return False


def parents_first(pids: set[int]) -> list[int]:
    """The processes ordered so that each comes after its ancestors among them. The order a stop
    signals in: bash (5.2) loses a trapped SIGTERM that arrives just after the child it waits for
    died of one (its `wait` returns 0 and the script goes on, its trap never run); a parent
    signalled first has its trap pending before its children's deaths reach it."""
    parents: dict[int, int] = {}
    for pid in pids:
        with contextlib.suppress(OSError, IndexError, ValueError):
            parents[pid] = int(proc_stat(pid)[1])

    def depth(pid: int) -> int:
        seen = 0
        while pid in parents and seen <= len(parents):  # (bounded: a pid reused meanwhile could loop)
            pid, seen = parents[pid], seen + 1
        return seen

    return sorted(pids, key=depth)


def start_time(pid: int) -> str:
    """When the process started (clock ticks since boot, /proc/<pid>/stat field 22): with the pid,
    names one process for good (pids are reused)."""
    return proc_stat(pid)[19]


def record_process(path: str, pid: int) -> None:
    """`path` names the process for good, as "pid start-time", written whole (a reader finds the
    earlier record or this one): read back by recorded_process."""
    with open(path + ".tmp", "w") as file:
        file.write(f"{pid} {start_time(pid)}")
    os.replace(path + ".tmp", path)


def recorded_process(path: str | os.PathLike[str]) -> int | None:
    """The process recorded at `path` (record_process), if it still runs: its pid; None once it
    has ended (a zombie too) or its pid is another process's. Two small reads: the executor asks
    this of each task on every poll. OSError: nothing recorded there; ValueError: no start time
    (a record of an earlier version)."""
    with open(path) as file:
        number, started = file.read().split()
    pid = int(number)
    try:
        stat = proc_stat(pid)
    except OSError:
        return None
    return pid if stat[0] != "Z" and stat[19] == started else None


def socket_address(directory_fd: int) -> str:
    """The server's socket in the work root open as `directory_fd` (through /proc: rings.socket_in)."""
    return socket_in(directory_fd, SOCKET_NAME)


def serve(work_root: str) -> int:
    """Fork a supervisor for each task asked for, until idle for SERVER_IDLE_S. One per work root:
    a second one started beside it (two schedulers at once) finds the lock taken and leaves."""
    root = os.open(work_root, os.O_RDONLY | os.O_DIRECTORY)
    lock = os.open(SOCKET_NAME + ".lock", os.O_RDWR | os.O_CREAT, 0o600, dir_fd=root)
    try:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        return 0
    with open(SERVER_PID_NAME, "w", opener=lambda name, flags: os.open(name, flags, 0o600, dir_fd=root)) as own:
        own.write(str(os.getpid()))
    with contextlib.suppress(FileNotFoundError):
        os.unlink(SOCKET_NAME, dir_fd=root)
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(socket_address(root))
    listener.listen(128)
    bound = os.stat(SOCKET_NAME, dir_fd=root).st_ino
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # supervisors are reaped by the kernel
    idle_until = time.monotonic() + SERVER_IDLE_S
    while time.monotonic() < idle_until:
        if not select.select([listener], [], [], SERVER_CHECK_S)[0]:
            try:
                if os.stat(SOCKET_NAME, dir_fd=root).st_ino != bound:
                    return 0  # replaced by a newer server
            except FileNotFoundError:
                return 0  # the work root is gone
            continue
        connection, _ = listener.accept()
        idle_until = time.monotonic() + SERVER_IDLE_S
        with connection:
            try:
                connection.settimeout(REQUEST_TIMEOUT_S)
                request = json.loads(_read_line(connection))
            except (OSError, ValueError):
                continue  # the executor went away mid-request: it starts nothing
            if os.fork() == 0:
                # The lock stays with the server alone: a supervisor holding it would keep a
                # later server from starting.
                listener.close()
                os.close(lock)
                os.close(root)
                _supervise_forked(connection, request)
    return 0


def _supervise_forked(connection: socket.socket, request: dict[str, object]) -> None:
    """In the server's forked child: the task's supervisor, in a session of its own, with the
    task's environment and script. It answers with its pid once its pid file is written. Never returns."""
    code = 255
    try:
        os.setsid()
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)  # it waits for its own command
        environment = request["env"]
        assert isinstance(environment, dict)
        os.environ.clear()
        os.environ.update(environment)

        def answer(pid: int) -> None:
            with contextlib.suppress(OSError):
                connection.sendall(f"{pid}\n".encode())
            connection.close()

        code = Supervisor(str(request["task_dir"])).run(started=answer, script=str(request.get("script", "")))
    finally:
        os._exit(code)


def _read_line(connection: socket.socket) -> bytes:
    data = b""
    while not data.endswith(b"\n"):
        chunk = connection.recv(65536)
        if not chunk:
            break
        data += chunk
    return data


if __name__ == "__main__":
    sys.exit(serve(sys.argv[2]))  # (argv[1] is the process executor's marker)
