"""The hop between the portal's proxy and an app's port, by where the port is opened (issue 44,
item 6; docs/architecture.md, "Networks", "Apps"): MB/s of 256 MB read from a stream server in a
real task, best of 3, every path in one run.

    sudo .venv/bin/python bench/app_paths.py      (root: sandboxed tasks as their own uid, Docker)

| path | what |
|---|---|
| process, node address | a sandboxed process task's port, forwarded by pasta at the node's address (before) |
| process, job address | the same, at the job's own loopback address (app_ports.py: now) |
| container, node address | a container's port published on the node's address, 127.0.0.2 (before: docker-proxy) |
| container, job network | the same container at its address on its job's network (now: no hop) |
| container, ssh tunnel | through the task's own sshd with the job's key, asyncssh on the portal's side (option c) |

The proxy itself moves ~1.2 GB/s (bench/app_proxy.py): a hop slower than that is what an app's
download waits on.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import os
import shutil
import socket
import sys
import tempfile
import time
import uuid
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
NODE = "127.0.0.2"
MB = 256
ROUNDS = 3
# A stream server: every connection gets MB megabytes, then is closed.
SERVER = (
    "exec python3 -c 'import socket, sys\n"
    'server = socket.create_server(("0.0.0.0", int(sys.argv[1])))\n'
    "block = bytes(1 << 20)\n"
    "while True:\n"
    "    connection, _ = server.accept()\n"
    f"    for _ in range({MB}): connection.sendall(block)\n"
    "    connection.close()' {port}"
)


def read_all(address: str, port: int, timeout: float = 60) -> float:
    """MB/s of one whole stream (0 when it cannot be had)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            with socket.create_connection((address, port), timeout=5) as connection:
                buffer = bytearray(1 << 20)
                began, total = time.perf_counter(), 0
                while count := connection.recv_into(buffer):
                    total += count
                took = time.perf_counter() - began
            if total == MB << 20:
                return MB / took
        except OSError:
            pass
        time.sleep(0.2)
    return 0.0


async def read_through_ssh(address: str, key: object, port: int) -> float:
    import asyncssh

    async with asyncssh.connect(address, username="root", client_keys=[key], known_hosts=None) as ssh:
        reader, writer = await ssh.open_connection("127.0.0.1", port, encoding=None)
        began, total = time.perf_counter(), 0
        while chunk := await reader.read(1 << 20):
            total += len(chunk)
        took = time.perf_counter() - began
        writer.close()
    return MB / took if total == MB << 20 else 0.0


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind((NODE, 0))
        return int(probe.getsockname()[1])


def best(measure: Callable[[], float]) -> float:
    return max(measure() for _ in range(ROUNDS))


def process_paths(work: Path) -> dict[str, float]:
    from clusters.executors.app_ports import job_app_address
    from clusters.executors.base import TaskLaunch
    from clusters.executors.netns import TaskNetwork
    from clusters.executors.process import ProcessExecutor
    from clusters.executors.sandbox import Sandbox

    executor = ProcessExecutor(
        work / "process", address=NODE, sandbox=Sandbox(hidden=(str(work),), network=TaskNetwork())
    )
    if executor.sandbox_problem:
        raise SystemExit(f"no sandbox here: {executor.sandbox_problem}")
    speeds = {}
    for name, app in (("process, node address", False), ("process, job address", True)):
        port = free_port()
        launch = TaskLaunch(
            job_id=9001, job_name="bench~paths", job_attempt=1, role="main", index=0, task_attempt=1 + app,
            image="-", command=SERVER.format(port=port), env={}, cpu=1, memory_mb=1024, shm_mb=64, gpus=[],
            ports={"web": [port]}, log_path=work / f"{app}.log", work_dir=work / f"task-{app}",
            app_ports=[port] if app else [], job_app_endpoints=[(NODE, port)] if app else [],
        )  # fmt: skip
        handle = executor.start(launch)
        try:
            address = job_app_address(9001) if app else NODE
            speeds[name] = best(functools.partial(read_all, address, port))
        finally:
            executor.stop(handle)
    return speeds


def container_paths(work: Path) -> dict[str, float]:
    import asyncssh

    from clusters.executors.base import TaskLaunch
    from clusters.executors.docker import DockerExecutor
    from tests.docker.conftest import remove_namespace
    from tests.factories import default_image

    namespace = f"paibench{uuid.uuid4().hex[:6]}"
    executor = DockerExecutor(namespace=namespace, address=NODE)
    key = asyncssh.generate_private_key("ssh-ed25519")
    try:
        ips = executor.prepare_job(9002, "bench~paths", [("main", 0)], NODE)
        port = free_port()
        launch = TaskLaunch(
            job_id=9002, job_name="bench~paths", job_attempt=1, role="main", index=0, task_attempt=1,
            image=default_image(), command=SERVER.format(port=port), env={"PAI_WORK_DIR": "/pai/work"}, cpu=2,
            memory_mb=1024, shm_mb=64, gpus=[], ports={"web": [port]}, log_path=work / "container.log",
            work_dir=work / "container", ip=ips[("main", 0)],
            ssh_authorized_keys=key.export_public_key().decode(),
        )  # fmt: skip
        executor.start(launch)
        ip = launch.ip
        speeds = {
            "container, node address": best(lambda: read_all(NODE, port)),
            "container, job network": best(lambda: read_all(ip, port)),
        }
        read_all(ip, port)  # (the server is up)
        ssh = 0.0
        for _ in range(ROUNDS):
            for _ in range(50):  # (sshd starts beside the command)
                try:
                    ssh = max(ssh, asyncio.run(read_through_ssh(ip, key, port)))
                    break
                except (OSError, asyncssh.Error):
                    time.sleep(0.2)
        speeds["container, ssh tunnel"] = ssh
        return speeds
    finally:
        remove_namespace(executor.api, namespace)


def main() -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "pai_portal.settings")
    os.environ.setdefault("PAI_LOG_LEVEL", "WARNING")
    logging.getLogger("asyncssh").setLevel(logging.WARNING)
    sys.path.insert(0, str(ROOT))
    import django

    django.setup()
    work = Path(tempfile.mkdtemp(prefix="pai-bench-paths-"))
    work.chmod(0o711)  # (the sandbox uid passes through to its work dir)
    try:
        speeds = {**process_paths(work), **container_paths(work)}
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print(f"{'path':<26} {'MB/s (best of 3, 256 MB)':>26}")
    for name, speed in speeds.items():
        print(f"{name:<26} {speed:>26.0f}")


if __name__ == "__main__":
    main()
