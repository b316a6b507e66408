"""The process executor: each task is a local process, in a bubblewrap sandbox, under limits.

It exists so that the portal works on a machine with no Docker engine and so that the scheduler
can be tested fast. Each task runs in the sandbox of sandbox.py (unprivileged, its own pid
namespace, only its work dir and its owner's storage mounts, none of the portal's files) with the
limits of limits.py (a cgroup, else rlimits). Where no sandbox can be had (no bwrap, no user
namespaces) only admins' tasks run, unsandboxed; everyone else's fail to start and say why.

Each task gets a directory under the work root holding `task.json` (labels), `supervise.json`,
`pid` (its supervisor's, with the supervisor's start time) and, once the command has ended,
`exit_code` written by the supervisor (supervise.py), not by the scheduler, so a scheduler restart
loses nothing: reconcile reads these files back. Supervisors are forked by the node's supervisor
server (supervise.py), started by the first task's start and again whenever it is gone.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import select
import signal
import socket
import subprocess
import sys
import threading
import time
from datetime import UTC, datetime
from functools import cached_property
from pathlib import Path

from catalogue import Message
from clusters.executors.app_ports import job_app_address
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
from clusters.executors.bells import BELLS_DIR, bell
from clusters.executors.interfaces import interface_variables
from clusters.executors.limits import DEFAULT_PIDS_LIMIT, CgroupLimits, TaskCgroup, rlimits
from clusters.executors.logcap import DEFAULT_LOG_MAX_BYTES
from clusters.executors.netns import PORT_RETRY_S, PORTS_FREED_S, TASK_INTERFACE
from clusters.executors.port_probe import bind_refusal
from clusters.executors.sandbox import Sandbox
from clusters.executors.stats import from_process_trees
from clusters.executors.supervise import (
    GRACE_FILE,
    PASTA_PID_NAME,
    SCRIPT_FD,
    claim,
    recorded_process,
    socket_address,
)
from clusters.job_files import job_dir_name

log = logging.getLogger("pai.executors.process")

# The task's script (secrets rendered into it) never travels in an argv or an environment: the
# supervisor hands it to the task's bash as an in-memory file on SCRIPT_FD (supervise.py).
COMMAND = f"exec bash /dev/fd/{SCRIPT_FD}"
MARKER = "pai-portal-task"
BASE_ENV_KEYS = ("PATH", "LANG", "LC_ALL", "TZ")
RUNTIME_DIR = Path(__file__).resolve().parent / "runtime"  # (the Docker executor's task runtime)
PROJECT_ROOT = Path(__file__).resolve().parents[2]  # where `python -m clusters.executors.supervise` imports from
STOP_GRACE_S = 3
SERVER_START_TIMEOUT_S = 10
SERVER_ANSWER_TIMEOUT_S = 30


def ssh_prologue(authorized_keys: str, env: dict[str, str]) -> str:
    """One line before the task's script (its line numbers stay) that runs the SSH runtime of
    Docker tasks (runtime/ssh.sh) in the sandbox as the task's user: an sshd of its own on its
    `ssh` port, so a job's tasks `ssh <role>-<index>` each other (mpirun, jobssh, sshbarrier).
    Tasks of a job with job-mates only. `env` (no secrets) is what SSH sessions see."""
    sessions = "\n".join(f"{key}={value}" for key, value in sorted(env.items()) if "\n" not in value)
    runtime = (RUNTIME_DIR / "ssh.sh").read_text()
    return (
        f"pai_ssh=0; PAI_SSH_AUTHORIZED_KEYS={ansi_c_quoted(authorized_keys)} "
        f"PAI_SSH_ENVIRONMENT={ansi_c_quoted(sessions)} bash -c {ansi_c_quoted(runtime)} pai-ssh || pai_ssh=$?; "
        'if [ "$pai_ssh" -eq 249 ]; then exit 249; '  # the sshbarrier ran out (PAIRuntimeSSHBarrierTimeout)
        'elif [ "$pai_ssh" -ne 0 ]; then echo "[pai-runtime] sshd did not start" >&2; fi; unset pai_ssh; '
    )


def ansi_c_quoted(text: str) -> str:
    """bash's $'...' quoting: any text as one word on one line."""
    escaped = text.replace("\\", "\\\\").replace("'", "\\'").replace("\n", "\\n").replace("\r", "\\r")
    return f"$'{escaped}'"


class ProcessExecutor(Executor):
    def __init__(
        self,
        work_root: Path,
        address: str = "127.0.0.1",
        *,
        sandbox: Sandbox | None = None,
        use_cgroups: bool = True,
        log_max_bytes: int = DEFAULT_LOG_MAX_BYTES,
        pids_limit: int = DEFAULT_PIDS_LIMIT,
    ):
        self.work_root = Path(work_root)
        self.address = address
        # Other tasks' directories are the portal's too: never visible to a task.
        self.sandbox = sandbox or Sandbox(hidden=(str(self.work_root),))
        self.cgroups = CgroupLimits.detect() if use_cgroups else None
        self.log_max_bytes = log_max_bytes
        self.pids_limit = pids_limit
        self._server: subprocess.Popen[bytes] | None = None
        self._server_lock = threading.Lock()  # (starts run on several threads)

    @cached_property
    def sandbox_problem(self) -> Message | None:
        """None when tasks run sandboxed here; else why not (probed once per executor)."""
        problem = self.sandbox.probe()
        if problem:
            log.warning("process node: no sandbox for tasks: %s; only admins' tasks will run", problem)
        return problem

    def _task_dir(self, launch: TaskLaunch) -> Path:
        return (
            self.work_root
            / job_dir_name(launch.job_id)
            / str(launch.job_attempt)
            / f"{launch.hostname}-{launch.task_attempt}"
        )

    def start(self, launch: TaskLaunch) -> TaskHandle:
        if self.sandbox_problem and not launch.owner_is_admin:
            raise ExecutorError(
                Message.of("exit.start.no_sandbox", problem=self.sandbox_problem),
                Failure.START_PERMISSION_DENIED,  # permanent: never retried
            )
        for mount in launch.mounts:
            if mount.nfs is not None:
                raise ExecutorError(
                    Message.of("exit.start.no_nfs", storage=mount.storage),
                    Failure.STORAGE_MOUNT_FAILED,
                    storage=mount.storage,
                )
        task_dir = self._task_dir(launch)
        executor_id = str(task_dir.relative_to(self.work_root))
        if self._started(task_dir):
            # This very attempt was started already (the scheduler died before recording it).
            return TaskHandle(executor_id=executor_id, ip=self.address)
        if self.sandbox.network is not None and not self.sandbox_problem:
            self._check_ports_free(launch)
        task_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
        # Labels before the process, written whole or not at all: reconcile lists the task
        # whenever the process may exist.
        partial = task_dir / "task.json.tmp"
        partial.write_text(json.dumps(launch.labels))
        partial.replace(task_dir / "task.json")
        work_dir = Path(launch.work_dir)
        work_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
        env = {key: os.environ[key] for key in BASE_ENV_KEYS if key in os.environ}
        env.setdefault("PATH", "/usr/local/bin:/usr/bin:/bin")
        env["HOME"] = str(work_dir)
        env.update(launch.env)
        # In a network namespace of its own the task's address is its interface's; else the node's.
        own_network = self.sandbox.network is not None and not self.sandbox_problem
        env.update(interface_variables(env, TASK_INTERFACE if own_network else None))
        script = launch.command
        if launch.ssh_authorized_keys and len(launch.extra_hosts) > 1 and not self.sandbox_problem:
            script = ssh_prologue(launch.ssh_authorized_keys, env) + script
        env.update(launch.secret_env)
        cgroup = self._make_cgroup(task_dir, launch)
        self._listen_for_exits()
        (task_dir / "supervise.json").write_text(json.dumps(self._supervision(launch, task_dir, cgroup)))
        self._spawn(executor_id, task_dir, env, script)
        return TaskHandle(executor_id=executor_id, ip=self.address)

    def _check_ports_free(self, launch: TaskLaunch) -> None:
        """pasta binds the task's declared ports only once the supervisor attaches its network: a
        port another program holds is found here first, as the Docker engine finds it, so the
        scheduler places the job again and keeps that port out of this node's placement. One held
        by the pasta of a task whose exit was just recorded is free in a moment (netns.py):
        looked at again until PORTS_FREED_S have passed."""
        deadline = time.monotonic() + PORTS_FREED_S
        for port in sorted({port for ports in launch.ports.values() for port in ports}):
            # (An app's port is forwarded from the job's own address: app_ports.py.)
            address = job_app_address(launch.job_id) if port in launch.app_ports else self.address
            for kind in (socket.SOCK_STREAM, socket.SOCK_DGRAM):
                while (refusal := bind_refusal(address, port, kind)) is not None and time.monotonic() < deadline:
                    time.sleep(PORT_RETRY_S)  # (SO_REUSEADDR, as pasta binds)
                if refusal is not None:
                    raise ExecutorError(
                        Message.of(
                            "exit.start.port_held", port=port, address=address, said=refusal.strerror or str(refusal)
                        ),
                        Failure.PORT_CONFLICT,
                    ) from refusal

    def _started(self, task_dir: Path) -> bool:
        return (task_dir / "pid").exists() or (task_dir / "exit_code").exists()

    def _spawn(self, executor_id: str, task_dir: Path, env: dict[str, str], script: str) -> None:
        """Start the task's supervisor (supervise.json is written), detached from the scheduler."""
        try:
            self._supervise(task_dir, env, script)
        except OSError as exc:
            raise ExecutorError(Message.of("exit.start.no_process", said=str(exc)), Failure.START_FAILED) from exc

    def _supervise(self, task_dir: Path, env: dict[str, str], script: str) -> None:
        """Ask the node's supervisor server to fork the task's supervisor; returns once the
        supervisor has written its pid (so every later poll finds it). Asked twice at most (a
        server leaving when idle may drop a request unread); a supervisor runs a task directory
        only once it has claimed it, so a second one never starts the task twice."""
        request = json.dumps({"task_dir": str(task_dir), "env": env, "script": script}).encode() + b"\n"
        problem: OSError = OSError("the node's supervisor server did not answer")
        for _ in range(2):
            try:
                if self._ask(request):
                    return
            except OSError as exc:
                problem = exc
        if claim(str(task_dir)):
            raise problem  # no supervisor has it, and none can take it now
        deadline = time.monotonic() + SERVER_ANSWER_TIMEOUT_S
        while self._pid(task_dir) is None:  # one has it: its pid comes in a moment
            if time.monotonic() > deadline:
                raise problem
            time.sleep(0.01)

    def _ask(self, request: bytes) -> bool:
        """Send one request; True when the supervisor answered with its pid."""
        with self._connect() as connection:
            connection.settimeout(SERVER_ANSWER_TIMEOUT_S)
            connection.sendall(request)
            answer = b""
            while chunk := connection.recv(64):
                answer += chunk
        return bool(answer.strip())

    def _connect(self) -> socket.socket:
        """A connection to the supervisor server, started first if none answers."""
        directory = os.open(self.work_root, os.O_RDONLY | os.O_DIRECTORY)
        try:
            deadline = time.monotonic() + SERVER_START_TIMEOUT_S
            while True:
                connection = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
                try:
                    connection.connect(socket_address(directory))
                    return connection
                except (FileNotFoundError, ConnectionRefusedError):
                    connection.close()
                    if time.monotonic() > deadline:
                        raise
                    self._start_server()
                    time.sleep(0.01)
        finally:
            os.close(directory)

    def _start_server(self) -> None:
        with self._server_lock:
            if self._server is not None and self._server.poll() is None:
                return  # starting (or a stale socket: it replaces it)
            # Standard library only and no site-packages (-S), in a session of its own: it and the
            # supervisors it forks outlive a scheduler restart.
            self._server = subprocess.Popen(
                [sys.executable, "-E", "-s", "-S", "-m", "clusters.executors.supervise", MARKER, str(self.work_root)],
                cwd=PROJECT_ROOT,
                env={key: os.environ[key] for key in BASE_ENV_KEYS if key in os.environ},
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                start_new_session=True,
            )

    def _make_cgroup(self, task_dir: Path, launch: TaskLaunch) -> TaskCgroup | None:
        if self.cgroups is None:
            return None
        try:
            return self.cgroups.create(str(task_dir), cpu=launch.cpu, memory_mb=launch.memory_mb, pids=self.pids_limit)
        except OSError as exc:
            raise ExecutorError(Message.of("exit.start.no_limits", said=str(exc)), Failure.CREATE_FAILED) from exc

    def _supervision(self, launch: TaskLaunch, task_dir: Path, cgroup: TaskCgroup | None) -> dict[str, object]:
        """supervise.json: what the supervisor runs, where its output goes, under which limits."""
        sandboxed = not self.sandbox_problem
        command = ["bash", "-c", COMMAND, MARKER]
        if sandboxed:
            passwd, group = self.sandbox.account_files(launch)
            self.sandbox.hand_over(
                launch,
                [str(launch.work_dir), str(passwd.parent), *(m.host_path for m in launch.mounts if not m.shared)],
            )
            self.sandbox.let_reach(launch, [m.host_path for m in launch.mounts if m.shared])
            command = self.sandbox.argv(launch, passwd, group, command)
        return {
            "argv": command,
            "cwd": str(launch.work_dir),
            "log_path": str(launch.log_path),
            "log_max_bytes": self.log_max_bytes,
            "stop_grace_s": STOP_GRACE_S,
            "memory_mb": launch.memory_mb,
            "sandboxed": sandboxed,
            "network": self.sandbox.network_plan(launch, self.address) if sandboxed else None,
            "cgroup": cgroup.dirs if cgroup is not None else None,
            "rlimits": None if cgroup is not None else rlimits(memory_mb=launch.memory_mb, pids=self.pids_limit),
            "bells": str(self.work_root / BELLS_DIR),
        }

    def _pid(self, task_dir: Path, name: str = "pid") -> int | None:
        try:
            return int((task_dir / name).read_text().split()[0])
        except (OSError, ValueError, IndexError):
            return None

    def _alive(self, executor_id: str, task_dir: Path) -> bool:
        """Whether the task's supervisor still runs: the very process its pid file records."""
        try:
            return recorded_process(task_dir / "pid") is not None
        except ValueError:
            return self._alive_by_command_line(task_dir)  # (a pid file of an earlier version: no start time)
        except OSError:
            return False  # no supervisor yet

    def _alive_by_command_line(self, task_dir: Path) -> bool:
        """A supervisor started with its own command line (one per task, before the server)."""
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

    def _listen_for_exits(self) -> None:
        """This process's bell rings when a task of this node ends (its supervisor rings it): a
        process that starts or polls tasks is one that waits for their exits."""
        bell().listen(self.work_root)

    def poll(self, handle: TaskHandle) -> TaskStatus:
        self._listen_for_exits()  # (the tasks of a scheduler started again)
        task_dir = self.work_root / handle.executor_id
        exit_file = task_dir / "exit_code"
        # Alive first: a supervisor records the exit before it ends, so one found gone has its
        # exit file by the time that is looked for (the other order could call a just-ended task lost).
        alive = self._alive(handle.executor_id, task_dir)
        if exit_file.exists():
            # Its run by one clock, the node's: the supervisor wrote its pid file as it began.
            started, finished = _file_time(task_dir / "pid"), _file_time(exit_file)
            code = int(exit_file.read_text().strip() or 255)
            if (task_dir / "oom_killed").exists() and code != 0:
                return TaskStatus(
                    running=False,
                    exit_code=code,
                    oom_killed=True,
                    started_at=started,
                    finished_at=finished,
                    diagnostics=Message.of("exit.out_of_memory", mb=self._memory_mb(task_dir)),
                )
            failure = (task_dir / "failure").read_text().strip() if (task_dir / "failure").exists() else ""
            return TaskStatus(
                running=False,
                exit_code=code,
                started_at=started,
                finished_at=finished,
                failure=Failure(failure) if failure else None,
                diagnostics=Message.of("exit.port_taken") if failure else "",
            )
        if alive:
            return TaskStatus(running=True)
        # Gone without an exit record: its supervisor was killed (SIGKILL, OOM killer, reboot).
        return TaskStatus(
            running=False, lost=True, failure=Failure.TASK_GONE, diagnostics=Message.of("exit.process_gone")
        )

    def sample(self, handles: list[TaskHandle]) -> dict[str, ResourceSample]:
        roots = {}
        for handle in handles:
            task_dir = self.work_root / handle.executor_id
            # What the supervisor started (the sandbox and the command), not the supervisor itself;
            # the supervisor's whole tree in the moment before it has started anything.
            pid = self._pid(task_dir, "child_pid") or self._pid(task_dir)
            if pid is not None and self._alive(handle.executor_id, task_dir):
                roots[handle.executor_id] = pid
        return from_process_trees(roots)

    def _memory_mb(self, task_dir: Path) -> int:
        with contextlib.suppress(OSError, ValueError, KeyError):
            return int(json.loads((task_dir / "supervise.json").read_text())["memory_mb"])
        return 0

    def terminate(self, handle: TaskHandle, grace_s: int) -> None:
        """The grace goes to the supervisor in its task directory, then SIGTERM: it passes the
        signal on to the task's processes and SIGKILLs them when the grace is over."""
        task_dir = self.work_root / handle.executor_id
        if not self._alive(handle.executor_id, task_dir):
            return
        grace_file = task_dir / GRACE_FILE
        if not grace_file.exists():
            (task_dir / (GRACE_FILE + ".tmp")).write_text(str(grace_s))
            os.replace(task_dir / (GRACE_FILE + ".tmp"), grace_file)
        self._signal_stop(task_dir)

    def _signal_stop(self, task_dir: Path) -> None:
        """SIGTERM to the task's supervisor (its session)."""
        pid = self._pid(task_dir)
        if pid is not None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(pid, signal.SIGTERM)

    def stop(self, handle: TaskHandle, *, keep: bool = False) -> None:
        task_dir = self.work_root / handle.executor_id
        self._kill(handle.executor_id, task_dir)
        if not keep:  # forget it: reconcile no longer lists it
            (task_dir / "task.json").unlink(missing_ok=True)

    def _kill(self, executor_id: str, task_dir: Path) -> None:
        """SIGTERM to the supervisor (it passes it on, then SIGKILLs after its grace period); should
        it be stuck, SIGKILL to it and to what it ran. The task's cgroup goes with what is left in it.
        A supervisor that has recorded the exit is left to end: it only waits for the task's pasta,
        told to end before (netns.py), and a stop waiting for it held the scheduler's pass."""
        pid = self._pid(task_dir)
        ending = (task_dir / "exit_code").exists()
        if pid is not None and not ending and self._alive(executor_id, task_dir):
            with contextlib.suppress(ProcessLookupError):
                os.killpg(pid, signal.SIGTERM)
            self._wait_gone(pid, executor_id, task_dir, STOP_GRACE_S + 2)
            if self._alive(executor_id, task_dir):
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(pid, signal.SIGKILL)
                self._kill_command(task_dir)
        if not self._alive(executor_id, task_dir):
            self._end_pasta(task_dir)
        with contextlib.suppress(OSError, ValueError, KeyError, TypeError):
            dirs = json.loads((task_dir / "supervise.json").read_text())["cgroup"]
            if dirs:
                TaskCgroup(dirs).remove()

    def _end_pasta(self, task_dir: Path) -> None:
        """The task's pasta, should its supervisor have been killed before ending it (a supervisor
        ends its own): left, it would hold the task's ports on the node for good, and each later
        task given them would fail as a port conflict. Only that very process (pid and start time)."""
        with contextlib.suppress(OSError, ValueError):  # (never started)
            if (pid := recorded_process(task_dir / PASTA_PID_NAME)) is not None:  # (else ended with its task)
                os.kill(pid, signal.SIGKILL)

    def _wait_gone(self, pid: int, executor_id: str, task_dir: Path, seconds: float) -> None:
        """Until the task's supervisor has ended, or `seconds` have passed: woken by its pidfd the
        moment it ends (looking every 20 ms added up to 20 ms to each removal, which a pass waits
        for). The pidfd is opened before the supervisor is known alive, so it is that process's."""
        try:
            pidfd = os.pidfd_open(pid)
        except OSError:  # gone already (or a kernel without pidfds: look every 20 ms)
            deadline = time.monotonic() + seconds
            while time.monotonic() < deadline and self._alive(executor_id, task_dir):
                time.sleep(0.02)
            return
        try:
            if self._alive(executor_id, task_dir):
                select.select([pidfd], [], [], seconds)
        finally:
            os.close(pidfd)

    def _kill_command(self, task_dir: Path) -> None:
        """SIGKILL to the process group the supervisor started, if that pid is still the task's."""
        pid = self._pid(task_dir, "child_pid")
        try:
            ours = pid is not None and MARKER.encode() in Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
        except OSError:
            ours = False
        if ours and pid is not None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(pid, signal.SIGKILL)

    def list_running(self) -> list[RunningTask]:
        running = []
        for labels_file in self.work_root.glob(f"{job_dir_name('*')}/*/*/task.json"):
            task_dir = labels_file.parent
            executor_id = str(task_dir.relative_to(self.work_root))
            labels = json.loads(labels_file.read_text())
            running.append(RunningTask(handle=TaskHandle(executor_id=executor_id, ip=self.address), labels=labels))
        return running


def _file_time(path: Path) -> datetime | None:
    """When the file was last written (the node's clock), or None without it."""
    try:
        return datetime.fromtimestamp(path.stat().st_mtime, tz=UTC)
    except OSError:
        return None
