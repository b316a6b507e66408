"""Keystroke echo round trip: the portal's web SSH (websocket -> daphne -> consumer -> asyncssh PTY)
versus a direct asyncssh PTY to the same task's sshd, in the same run.

    .venv/bin/python bench/webssh.py [N]      (default N=500 keystrokes per path; needs Docker
                                                and pai-portal/base:latest: make image)

A real task container runs the portal's ssh runtime (clusters/executors/runtime/ssh.sh); the
portal runs as `daphne pai_portal.asgi:application` in its own process on a scratch SQLite DB, and
the browser side is a `websockets` client with the session cookie and Origin a browser sends.
In both paths the PTY runs `cat > /dev/null`, so every keystroke is echoed by the terminal's
line discipline: one byte out, one byte back. Rounds alternate between the paths to share drift.
Goal: the websocket path within 2 ms of direct (median).
"""

from __future__ import annotations

import asyncio
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
IMAGE = "pai-portal/base:latest"
ROUNDS = 5
WARMUP = 30
PROMPT = b"# "


def setup_django(var: Path) -> None:
    os.environ.update(PAI_VAR_DIR=str(var), PAI_LOG_LEVEL="WARNING", DJANGO_SETTINGS_MODULE="pai_portal.settings")
    sys.path.insert(0, str(ROOT))
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0)


def make_job() -> tuple[Any, str]:
    """A user's job with its key pair and one task; returns (job, session cookie)."""
    from django.contrib.auth import get_user_model
    from django.test import Client

    from clusters.models import VirtualCluster
    from jobs.models import Job, Task
    from jobs.ssh import attach_new_keypair

    user = get_user_model().objects.create_user("bench", password="bench-password-1")
    spec = {"name": "webssh", "taskRoles": {"worker": {"instances": 1}}, "extras": {}}
    job = Job(owner=user, name="webssh", virtual_cluster=VirtualCluster.objects.get_or_create(name="default")[0])
    job.config_text, job.spec = "", spec
    attach_new_keypair(job)
    job.save()
    Task.objects.create(job=job, role="worker", index=0)
    client = Client()
    client.force_login(user)
    return job, f"sessionid={client.cookies['sessionid'].value}"


def start_task_container(job: Any, runtime: Path) -> tuple[Any, int]:
    import docker

    from jobs.ssh import authorized_keys_for

    runtime.mkdir()
    shutil.copy(ROOT / "clusters" / "executors" / "runtime" / "ssh.sh", runtime / "ssh.sh")
    (runtime / "authorized_keys").write_text(authorized_keys_for(job))
    client: Any = docker.from_env()
    container = client.containers.run(
        IMAGE,
        ["sh", "-c", "bash /pai/runtime/ssh.sh && exec sleep infinity"],
        detach=True,
        hostname="worker-0",
        volumes={str(runtime): {"bind": "/pai/runtime", "mode": "ro"}},
        ports={"22/tcp": ("127.0.0.1", None)},
        labels={"pai.bench": "webssh"},
    )
    for _ in range(100):
        container.reload()
        bindings = container.attrs["NetworkSettings"]["Ports"].get("22/tcp")
        if bindings:
            port = int(bindings[0]["HostPort"])
            if banner_ready(port):
                return container, port
        time.sleep(0.1)
    container.remove(force=True)
    raise SystemExit("the task's sshd did not answer")


def banner_ready(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=1) as conn:
            return conn.recv(4) == b"SSH-"
    except OSError:
        return False


def record_running(job: Any, port: int) -> None:
    from clusters.models import Node
    from jobs.models import TaskState

    node = Node.objects.create(name="bench-node", address="127.0.0.1", executor=Node.Executor.DOCKER)
    job.tasks.update(state=TaskState.RUNNING, node=node, ports={"ssh": [port]})


def start_daphne(var: Path) -> tuple[subprocess.Popen, int]:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = int(probe.getsockname()[1])
    env = {**os.environ, "PAI_VAR_DIR": str(var), "PAI_LOG_LEVEL": "WARNING"}
    daphne = subprocess.Popen(
        [str(ROOT / ".venv" / "bin" / "daphne"), "-b", "127.0.0.1", "-p", str(port), "pai_portal.asgi:application"],
        cwd=ROOT,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    for _ in range(200):
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            return daphne, port
        except OSError:
            time.sleep(0.05)
    daphne.kill()
    raise SystemExit("daphne did not start")


class Direct:
    """asyncssh PTY straight to the task's sshd."""

    def __init__(self, port: int, private_key: str):
        self.port, self.private_key = port, private_key

    async def open(self) -> None:
        import asyncssh

        self.conn = await asyncssh.connect(
            "127.0.0.1",
            self.port,
            username="root",
            client_keys=[asyncssh.import_private_key(self.private_key)],
            known_hosts=None,
        )
        self.process = await self.conn.create_process(term_type="xterm", term_size=(120, 40), encoding=None)

    async def send(self, data: bytes) -> None:
        self.process.stdin.write(data)

    async def recv(self) -> bytes:
        return bytes(await self.process.stdout.read(65536))

    async def close(self) -> None:
        self.process.close()
        self.conn.close()


class ThroughPortal:
    """The browser's path: websocket to daphne, the portal's consumer, its asyncssh PTY."""

    def __init__(self, url: str, cookie: str, origin: str):
        self.url, self.cookie, self.origin = url, cookie, origin

    async def open(self) -> None:
        import websockets
        from websockets.typing import Origin

        self.ws = await websockets.connect(
            self.url, additional_headers={"Cookie": self.cookie}, origin=Origin(self.origin), compression=None
        )

    async def send(self, data: bytes) -> None:
        await self.ws.send(data)

    async def recv(self) -> bytes:
        message = await self.ws.recv()
        return message if isinstance(message, bytes) else message.encode()

    async def close(self) -> None:
        await self.ws.close()


async def read_until(path: Any, needle: bytes, timeout: float = 10.0) -> None:
    seen = b""
    async with asyncio.timeout(timeout):
        while needle not in seen:
            seen += await path.recv()


async def echo_times(path: Any, count: int) -> list[float]:
    """Seconds from sending one keystroke to reading its echo, `count` times."""
    times = []
    for i in range(count):
        start = time.perf_counter()
        await path.send(b"a")
        await read_until(path, b"a")
        times.append(time.perf_counter() - start)
        if i % 60 == 59:  # end the line now and then; its echo is not timed
            await path.send(b"\n")
            await read_until(path, b"\n")
    await path.send(b"\n")
    await read_until(path, b"\n")
    return times


async def measure(paths: dict[str, Any], per_path: int) -> dict[str, list[float]]:
    results: dict[str, list[float]] = {name: [] for name in paths}
    for path in paths.values():
        await path.open()
        await read_until(path, PROMPT)
        await path.send(b"stty -ixon; exec cat > /dev/null\n")
        await read_until(path, b"/dev/null\r\n")
        await echo_times(path, WARMUP)
    for _ in range(ROUNDS):
        for name, path in paths.items():
            results[name] += await echo_times(path, per_path // ROUNDS)
    for path in paths.values():
        await path.close()
    return results


def summary(times: list[float]) -> dict[str, float]:
    ms = sorted(t * 1000 for t in times)
    return {
        "median": statistics.median(ms),
        "mean": statistics.fmean(ms),
        "p95": ms[int(len(ms) * 0.95) - 1],
        "p99": ms[int(len(ms) * 0.99) - 1],
        "min": ms[0],
    }


def main() -> None:
    per_path = int(sys.argv[1]) if len(sys.argv) > 1 else 500
    var = Path(tempfile.mkdtemp(prefix="pai-webssh-"))
    setup_django(var)
    from jobs.ssh import job_private_key

    job, cookie = make_job()
    container, ssh_port = start_task_container(job, var / "runtime")
    record_running(job, ssh_port)
    daphne, http_port = start_daphne(var)
    try:
        socket_url = f"ws://127.0.0.1:{http_port}/ws/jobs/{job.full_name}/terminal/worker/0/?cols=120&rows=40"
        paths = {
            "direct asyncssh PTY": Direct(ssh_port, job_private_key(job)),
            "portal websocket": ThroughPortal(socket_url, cookie, f"http://127.0.0.1:{http_port}"),
        }
        results = asyncio.run(measure(paths, per_path))
    finally:
        daphne.terminate()
        daphne.wait(timeout=10)
        container.remove(force=True)
        shutil.rmtree(var, ignore_errors=True)

    print(f"keystroke echo round trip, {per_path} keystrokes per path ({ROUNDS} alternating rounds), ms")
    print(f"{'path':<22}{'median':>9}{'mean':>9}{'p95':>9}{'p99':>9}{'min':>9}")
    stats = {name: summary(times) for name, times in results.items()}
    for name, row in stats.items():
        print(f"{name:<22}" + "".join(f"{row[key]:>9.3f}" for key in ("median", "mean", "p95", "p99", "min")))
    extra = stats["portal websocket"]["median"] - stats["direct asyncssh PTY"]["median"]
    verdict = "within" if extra <= 2.0 else "NOT within"
    print(f"the portal adds {extra:.3f} ms at the median: {verdict} the 2 ms goal")


if __name__ == "__main__":
    main()
