"""The task wrapper: what each Slurm step runs. `python -m clusters.slurm.task JOB_DIR ROLE INDEX PORTS`.

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
   A `stop` file in the task directory, or SIGTERM (scancel), stops the running attempt; after a
   SIGTERM the task directory gets a `cancelled` file first, so the portal takes Slurm's word for
   how the attempt ended (cancelled, preempted, node failure, time limit), not the exit code.

Standard library only, run with -S: no Django, no site-packages on the nodes.
"""

from __future__ import annotations

import contextlib
import http.client
import json
import os
import signal
import socket
import sys
import time
import urllib.parse
from pathlib import Path

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
            sock = socket.socket()
            sock.bind(("", 0))
            sockets.append(sock)
        return [sock.getsockname()[1] for sock in sockets]
    finally:
        for sock in sockets:
            sock.close()


def gpu_indices(visible: str) -> list[int]:
    return [int(value) for value in visible.split(",") if value.strip().isdigit()]


def write_json(path: Path, value: object) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_name(path.name + ".tmp")
    partial.write_text(json.dumps(value))
    partial.replace(path)


class _UnixConnection(http.client.HTTPConnection):
    def __init__(self, path: str):
        super().__init__("localhost", timeout=ENGINE_TIMEOUT_S)
        self.path = path

    def connect(self) -> None:
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.settimeout(ENGINE_TIMEOUT_S)
        self.sock.connect(self.path)


def stop_container(engine: str, name: str) -> bool:
    """Ask the node's engine (`unix://PATH`, `tcp://HOST:PORT`; empty: the local socket) to stop the
    container; False where it cannot be asked (a TLS engine: the portal removes it instead)."""
    url = urllib.parse.urlsplit(engine or "unix:///var/run/docker.sock")
    connection: http.client.HTTPConnection
    if url.scheme == "unix":
        connection = _UnixConnection(url.path)
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
    def __init__(self, job_dir: Path, role: str, index: int):
        self.job_dir = job_dir
        self.task = f"{role}-{index}"
        self.child: int | None = None  # the running attempt's supervisor
        self.task_dir: Path | None = None  # the running attempt's directory
        self.cancelled = False
        self.container: tuple[str, str] | None = None  # (engine, name) of the held attempt's container

    def probe(self, ports: int) -> None:
        write_json(
            self.job_dir / "probe" / f"{self.task}.json",
            {
                "node": os.environ.get("SLURMD_NODENAME") or socket.gethostname(),
                "gpus": gpu_indices(os.environ.get("CUDA_VISIBLE_DEVICES", "")),
                "ports": free_ports(ports),
                "step": f"{os.environ.get('SLURM_JOB_ID', '')}.{os.environ.get('SLURM_STEP_ID', '')}",
            },
        )

    def _on_term(self, signum: int, frame: object) -> None:
        self.cancelled = True
        if self.task_dir is not None:
            with contextlib.suppress(OSError):
                (self.task_dir / CANCELLED_FILE).touch()
        self._stop_attempt()
        if self.container is not None:
            stop_container(*self.container)

    def _stop_attempt(self) -> None:
        if self.child is not None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.child, signal.SIGTERM)  # the supervisor stops the task within its grace

    def wait_for_launch(self, attempt: int) -> dict[str, object] | None:
        path = self.job_dir / "launch" / f"{self.task}-{attempt}.json"
        while not self.cancelled:
            with contextlib.suppress(OSError, ValueError):
                return dict(json.loads(path.read_text()))
            time.sleep(POLL_S)
        return None

    def hold_container(self, launch: dict[str, object], attempt: int) -> int:
        """Until the container's attempt is over: its exit as the portal saw it (1 when unknown)."""
        task_dir = Path(str(launch["task_dir"]))
        self.container, self.task_dir = (str(launch["engine"]), str(launch["container"])), task_dir
        next_launch = self.job_dir / "launch" / f"{self.task}-{attempt + 1}.json"
        code = 1
        while not self.cancelled:
            with contextlib.suppress(OSError, ValueError):
                code = int((task_dir / EXIT_FILE).read_text())
                break
            if (task_dir / STOP_FILE).exists() or next_launch.exists():
                break
            time.sleep(POLL_S * 10)  # three stat()s; the container's exit reaches the portal first anyway
        self.container = None
        return code

    def run_attempt(self, launch: dict[str, object]) -> int:
        task_dir = Path(str(launch["task_dir"]))
        env = {str(key): str(value) for key, value in dict(launch["env"]).items()}  # type: ignore[call-overload]
        from clusters.executors.supervise import Supervisor  # (imported while the portal prepared the launch)

        pid = os.fork()
        if pid == 0:  # the supervisor, with the task's environment only
            signal.signal(signal.SIGTERM, signal.SIG_DFL)
            os.environ.clear()
            os.environ.update(env)
            os._exit(Supervisor(task_dir).run())
        self.child, self.task_dir = pid, task_dir
        stop_file = task_dir / STOP_FILE
        stopping = False
        while True:
            done, status = os.waitpid(pid, os.WNOHANG)
            if done:
                break
            if not stopping and stop_file.exists():  # this attempt only: a retry may follow
                self._stop_attempt()
                stopping = True
            time.sleep(POLL_S)
        self.child = None
        return os.waitstatus_to_exitcode(status)

    def run(self, ports: int) -> int:
        signal.signal(signal.SIGTERM, self._on_term)
        self.probe(ports)
        import clusters.executors.supervise  # noqa: F401  (now, while the portal builds the launch)

        attempt = 1
        while (launch := self.wait_for_launch(attempt)) is not None:
            code = self.hold_container(launch, attempt) if "container" in launch else self.run_attempt(launch)
            if code == 0:
                return 0
            attempt += 1
        return 0


if __name__ == "__main__":
    job_dir, role, index, ports = sys.argv[1:5]
    sys.exit(Wrapper(Path(job_dir), role, int(index)).run(int(ports)))
