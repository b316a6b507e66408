"""The task wrapper: what each Slurm step runs (`main()`, with JOB_DIR ROLE INDEX PORTS).

1. Says where the task landed: `probe/<role>-<index>.json` in the job directory with the node's
   name, the GPUs Slurm gave the step (CUDA_VISIBLE_DEVICES) and PORTS ports free on the node.
   The portal waits for every task's probe, then builds each task's `PAI_*` environment with the
   real host lists and writes `launch/<role>-<index>-<attempt>.json`.
2. Runs each attempt it is given. A launch naming a `container` (a node with a Docker engine: the
   portal made the container, clusters/executors/slurm.py) is only held: the step keeps the
   allocation until the attempt is over (the portal writes the container's `exit_code` into the
   task directory, or a `stop` file, or the next attempt's launch appears); a SIGTERM stops the
   container through the node's engine first. Any other launch runs the process executor's
   supervisor (clusters/executors/supervise) in the task directory, with the launch's environment,
   in a child forked from this process (no second interpreter to start: the launch is on every
   task's critical path). After a failed attempt it waits for the next one (a task retry) until the
   portal ends the Slurm job; after a success it is done.
   A `stop` file in the task directory (the portal's stop, a user's or a time limit's, with its
   grace written beside it) stops the running attempt: SIGTERM to its supervisor, which passes it
   on to the task. Slurm's own end (scancel, its time limit, its preemption) signals every process
   of the step itself, once, and kills them after its KillWait: the supervisor leaves the task to
   that (the sandbox's bwrap ignores the signal, the task's processes trap it), and the task
   directory gets a `cancelled` file, so the portal takes Slurm's word for how the attempt ended
   (cancelled, preempted, node failure, time limit), not the exit code.

Standard library only, run with -S: no Django, no site-packages on the nodes. Everything before
the probe is on the Slurm slot's critical path and shares the node's CPUs with the other steps of a
wave of jobs, so that part imports only C modules (`_socket`, `_json`, `_signal`), no pathlib, json, socket or signal
(12 ms of imports per task); the rest is imported while the portal builds the launch.
"""

from __future__ import annotations

import os
import sys
import time
from _json import encode_basestring_ascii as json_string
from _signal import SIG_BLOCK, SIG_DFL, SIG_SETMASK, SIGTERM, pthread_sigmask, signal
from _socket import socket

CANCELLED_FILE = "cancelled"
EXIT_FILE = "exit_code"  # in a task directory: how the attempt ended (the supervisor's; the portal's for a container)
STOP_FILE = "stop"  # in a task directory: the wrapper stops the attempt
ENGINE_TIMEOUT_S = 10
CONTAINER_STOP_GRACE_S = 3
POLL_S = 0.01  # a stat() of one file: cheap, and on the path of every launch


def free_ports(count: int) -> list[int]:
    """Ports free on this node now: bound all at once, so they differ, then released for the task."""
    sockets = []
    try:
        for _ in range(count):
            sock = socket()
            sock.bind(("", 0))
            sockets.append(sock)
        return [sock.getsockname()[1] for sock in sockets]
    finally:
        for sock in sockets:
            sock.close()


def gpu_indices(visible: str) -> list[int]:
    return [int(value) for value in visible.split(",") if value.strip().isdigit()]


def probe_json(node: str, gpus: list[int], ports: list[int], step: str) -> str:
    numbers = ", ".join
    return (
        f'{{"node": {json_string(node)}, "gpus": [{numbers(map(str, gpus))}], '
        f'"ports": [{numbers(map(str, ports))}], "step": {json_string(step)}}}'
    )


def write_file(path: str, text: str, *, mode: int = 0o666, dir_mode: int = 0o777) -> None:
    """Written whole under another name, then renamed: a reader never sees half of it. The modes
    (less the umask) are the file's and those of the directories made for it. The portal writes
    the steps' launches and the containers' exit records with it too."""
    os.makedirs(os.path.dirname(path), mode=dir_mode, exist_ok=True)
    partial = path + ".tmp"
    with os.fdopen(os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, mode), "w") as file:
        file.write(text)
    os.replace(partial, path)


def touch(path: str) -> None:
    try:  # noqa: SIM105  (contextlib costs 3 ms of imports)
        os.close(os.open(path, os.O_WRONLY | os.O_CREAT, 0o644))
    except OSError:
        pass


def stop_container(engine: str, name: str) -> bool:
    """Ask the node's engine (`unix://PATH`, `tcp://HOST:PORT`; empty: the local socket) to stop the
    container; False where it cannot be asked (a TLS engine: the portal removes it instead)."""
    import http.client
    import socket as sockets
    import urllib.parse

    class UnixConnection(http.client.HTTPConnection):
        def __init__(self, path: str):
            super().__init__("localhost", timeout=ENGINE_TIMEOUT_S)
            self.path = path

        def connect(self) -> None:
            self.sock = sockets.socket(sockets.AF_UNIX, sockets.SOCK_STREAM)
            self.sock.settimeout(ENGINE_TIMEOUT_S)
            self.sock.connect(self.path)

    url = urllib.parse.urlsplit(engine or "unix:///var/run/docker.sock")
    connection: http.client.HTTPConnection
    if url.scheme == "unix":
        connection = UnixConnection(url.path)
    elif url.scheme in {"tcp", "http"} and url.hostname:
        connection = http.client.HTTPConnection(url.hostname, url.port or 2375, timeout=ENGINE_TIMEOUT_S)
    else:
        return False
    try:
        connection.request("POST", f"/containers/{urllib.parse.quote(name)}/stop?t={CONTAINER_STOP_GRACE_S}")
        return connection.getresponse().status in {204, 304, 404}
    except OSError:
        return False
    finally:
        connection.close()


class Wrapper:
    def __init__(self, job_dir: str, role: str, index: int):
        self.job_dir = job_dir
        self.task = f"{role}-{index}"
        self.child: int | None = None  # the running attempt's supervisor
        self.task_dir: str | None = None  # the running attempt's directory
        self.cancelled = False
        self.container: tuple[str, str] | None = None  # (engine, name) of the held attempt's container

    def probe(self, ports: int) -> None:
        write_file(
            os.path.join(self.job_dir, "probe", f"{self.task}.json"),
            probe_json(
                os.environ.get("SLURMD_NODENAME") or os.uname().nodename,
                gpu_indices(os.environ.get("CUDA_VISIBLE_DEVICES", "")),
                free_ports(ports),
                f"{os.environ.get('SLURM_JOB_ID', '')}.{os.environ.get('SLURM_STEP_ID', '')}",
            ),
        )

    def _on_term(self, signum: int, frame: object) -> None:
        """Slurm ends the step (scancel, its time limit, its preemption): it has signalled every
        process of the step, the task's included, and kills them after its KillWait. A process
        attempt's supervisor leaves the task to that (see Supervisor._on_stop); a container, which
        Slurm's signal does not reach, is stopped through its engine."""
        self.cancelled = True
        if self.task_dir is not None:
            touch(os.path.join(self.task_dir, CANCELLED_FILE))
        if self.container is not None:
            stop_container(*self.container)

    def _stop_attempt(self) -> None:
        if self.child is not None:
            try:  # noqa: SIM105
                os.kill(self.child, SIGTERM)  # the supervisor stops the task within its grace
            except ProcessLookupError:
                pass

    def wait_for_launch(self, attempt: int) -> dict[str, object] | None:
        import json

        path = os.path.join(self.job_dir, "launch", f"{self.task}-{attempt}.json")
        while not self.cancelled:
            try:
                with open(path) as file:
                    return dict(json.load(file))
            except (OSError, ValueError):
                time.sleep(POLL_S)
        return None

    def hold_container(self, launch: dict[str, object], attempt: int) -> int:
        """Until the container's attempt is over: its exit as the portal saw it (1 when unknown)."""
        task_dir = str(launch["task_dir"])
        self.container, self.task_dir = (str(launch["engine"]), str(launch["container"])), task_dir
        next_launch = os.path.join(self.job_dir, "launch", f"{self.task}-{attempt + 1}.json")
        stop_file = os.path.join(task_dir, STOP_FILE)
        code = 1
        while not self.cancelled:
            try:
                with open(os.path.join(task_dir, EXIT_FILE)) as file:
                    code = int(file.read())
                break
            except (OSError, ValueError):
                pass
            if os.path.exists(stop_file) or os.path.exists(next_launch):
                break
            time.sleep(POLL_S * 10)  # three stat()s; the container's exit reaches the portal first anyway
        self.container = None
        return code

    def run_attempt(self, launch: dict[str, object]) -> int:
        task_dir = str(launch["task_dir"])
        env = {str(key): str(value) for key, value in dict(launch["env"]).items()}  # type: ignore[call-overload]
        from clusters.executors.supervise import Supervisor  # (imported while the portal prepared the launch)

        # SIGTERM held across the fork: the wrapper's stop may come before the supervisor has set
        # its handler, and killed by it then (or run the wrapper's handler), the attempt would leave
        # no exit record. The supervisor lets it through once its handler is set (Supervisor.run).
        held = pthread_sigmask(SIG_BLOCK, {SIGTERM})
        pid = os.fork()
        if pid == 0:  # the supervisor, with the task's environment only
            signal(SIGTERM, SIG_DFL)
            os.environ.clear()
            os.environ.update(env)
            supervisor = Supervisor(task_dir, portal_stop_file=os.path.join(task_dir, STOP_FILE))
            os._exit(supervisor.run(script=str(launch.get("script", ""))))
        pthread_sigmask(SIG_SETMASK, held)
        self.child, self.task_dir = pid, task_dir
        status = self._wait_for(pid, os.path.join(task_dir, STOP_FILE))
        self.child = None
        return os.waitstatus_to_exitcode(status)

    def _wait_for(self, pid: int, stop_file: str) -> int:
        """The supervisor's wait status. Woken by its end at once (a pidfd), and every POLL_S to
        look for this attempt's stop file (a retry may follow)."""
        import select

        pidfd = os.pidfd_open(pid)
        try:
            stopping = False
            while True:
                done, status = os.waitpid(pid, os.WNOHANG)
                if done:
                    return status
                if not stopping and os.path.exists(stop_file):
                    self._stop_attempt()
                    stopping = True
                select.select([pidfd], [], [], POLL_S)
        finally:
            os.close(pidfd)

    def run(self, ports: int) -> int:
        signal(SIGTERM, self._on_term)
        self.probe(ports)
        import clusters.executors.supervise  # noqa: F401  (now, while the portal builds the launch)

        attempt = 1
        while (launch := self.wait_for_launch(attempt)) is not None:
            code = self.hold_container(launch, attempt) if "container" in launch else self.run_attempt(launch)
            if code == 0:
                return 0
            attempt += 1
        return 0


def main() -> None:
    """`python -E -s -S -c 'from clusters.slurm.task import main; main()' JOB_DIR ROLE INDEX PORTS`."""
    job_dir, role, index, ports = sys.argv[1:5]
    code = Wrapper(job_dir, role, int(index)).run(int(ports))
    sys.stdout.flush()
    os._exit(code)  # the step ends now: no interpreter teardown on the slot's time
