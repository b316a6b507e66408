"""The portal served as in production, for the HTTP benchmarks (bench/api.py, bench/load.py).

- a throwaway state directory (PAI_VAR_DIR: its own SQLite DB, secret key, logs), migrated, and
  the benchmark's own data made by the benchmark script itself in a child process
  (`prepare()` runs `<script> --prepare-database ...` and reads the JSON it prints last);
- the server as production runs it: `manage.py serve` (granian, `workers` processes); or, with
  server="daphne" (what production ran before), daphne processes sharing ONE listening socket
  (created here and passed with `--fd`: the kernel hands each new connection to whichever worker
  accepts first), serving `app` (APPS);
- keep-alive HTTP clients, and the percentile the benchmarks print.
DATABASE_URL, when set, is used instead of the throwaway SQLite database (give it a database of
its own).
"""

from __future__ import annotations

import http.client
import json
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PYTHON = sys.executable
DAPHNE = str(Path(PYTHON).with_name("daphne"))
# `production`: HTTP through a2wsgi to Django's WSGI handler; `django-asgi`: Django's own ASGI
# handler (two thread hops per middleware), for comparison (daphne only).
APPS = {"production": "pai_portal.asgi:application", "django-asgi": "bench.served:django_asgi_application"}

JOB_YAML = """protocolVersion: 2
name: {name}
type: job
prerequisites:
  - name: image
    type: dockerimage
    uri: pai-portal/base:latest
taskRoles:
  worker:
    instances: 1
    dockerImage: image
    resourcePerInstance: {{cpu: 1, memoryMB: 256, gpu: 0}}
    commands:
      - echo bench
"""


def __getattr__(name: str) -> object:
    """`bench.served:django_asgi_application`: Django's own ASGI handler for HTTP, for comparison
    with the production wiring (daphne imports it by name)."""
    if name != "django_asgi_application":
        raise AttributeError(name)
    from django.core.asgi import get_asgi_application

    import pai_portal.asgi  # noqa: F401  (Django set up exactly as production does)

    return get_asgi_application()


def served_env(var_dir: Path, base: dict[str, str] | None = None, **settings: str) -> dict[str, str]:
    """The environment of the server and of the preparing child: `base` (default: this process's
    environment) with the state directory and the given PAI_* settings."""
    env = dict(os.environ if base is None else base)
    env.update(
        DJANGO_SETTINGS_MODULE="pai_portal.settings",
        PAI_VAR_DIR=str(var_dir),
        PAI_LOG_LEVEL="WARNING",
        PYTHONPATH=str(ROOT),
        **settings,
    )
    return env


def prepare(script: str, env: dict[str, str], *args: str) -> dict:
    """Migrate the state directory's database, then run the benchmark's own preparation in a child
    process with the served environment; returns the JSON it printed last."""
    subprocess.run([PYTHON, "manage.py", "migrate", "--noinput", "-v0"], cwd=ROOT, env=env, check=True)
    prepared = subprocess.run(
        [PYTHON, script, "--prepare-database", *args], cwd=ROOT, env=env, check=True, capture_output=True, text=True
    )
    return json.loads(prepared.stdout.strip().splitlines()[-1])


def start(command: list[str], env: dict[str, str], log: Path) -> subprocess.Popen:
    return subprocess.Popen(command, cwd=ROOT, env=env, stdout=log.open("ab"), stderr=subprocess.STDOUT)


@contextmanager
def served(
    var_dir: Path,
    env: dict[str, str],
    *,
    workers: int,
    server: str = "granian",
    app: str = "production",
    beside: tuple[list[str], ...] = (),
) -> Iterator[tuple[int, list[int]]]:
    """Serve the portal (and run the `beside` commands, e.g. the scheduler) until the block ends;
    yields the port and the server's process ids."""
    processes = [start(command, env, var_dir / f"{Path(command[-1]).name}.log") for command in beside]
    try:
        if server == "granian":
            port = free_port()
            serve = [PYTHON, "manage.py", "serve", "--port", str(port), "--workers", str(workers)]
            servers = [start(serve, env, var_dir / "server.log")]
        else:
            servers, port = start_daphnes(var_dir, workers, app, env)
        processes += servers
        wait_for_server(port, workers, var_dir)
        yield port, [process.pid for process in servers]
    finally:
        for process in processes:
            process.terminate()
        for process in processes:
            try:
                process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                process.kill()


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def start_daphnes(var_dir: Path, workers: int, app: str, env: dict[str, str]) -> tuple[list[subprocess.Popen], int]:
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind(("127.0.0.1", 0))
    listener.listen(1024)
    listener.set_inheritable(True)
    port = listener.getsockname()[1]
    log = (var_dir / "server.log").open("ab")
    processes = [
        subprocess.Popen(
            [DAPHNE, "--fd", str(listener.fileno()), "-v", "0", APPS[app]],
            cwd=ROOT,
            env=env,
            pass_fds=(listener.fileno(),),
            stdout=log,
            stderr=log,
        )
        for _ in range(workers)
    ]
    listener.close()  # the workers hold it
    return processes, port


def wait_for_server(port: int, workers: int, var_dir: Path) -> None:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            probe = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
            probe.request("GET", "/api/v2/info")
            if probe.getresponse().status == 200:
                # Every worker imports Django lazily on its first request: warm them all.
                time.sleep(1.0 * workers)
                return
        except (OSError, http.client.HTTPException):
            pass
        time.sleep(0.2)
    raise SystemExit(f"the server did not answer; see {var_dir / 'server.log'}")


class Client:
    """One keep-alive connection; requests return (status, seconds)."""

    def __init__(self, port: int, token: str):
        self.port = port
        self.headers = {"Authorization": f"Bearer {token}"}
        self.connection = http.client.HTTPConnection("127.0.0.1", port, timeout=60)

    def request(self, method: str, path: str, body: str | None = None, content_type: str = "") -> tuple[int, float]:
        headers = dict(self.headers)
        if content_type:
            headers["Content-Type"] = content_type
        began = time.perf_counter()
        for attempt in range(2):
            try:
                self.connection.request(method, path, body=body, headers=headers)
                response = self.connection.getresponse()
                response.read()
                return response.status, time.perf_counter() - began
            except (http.client.HTTPException, ConnectionError):
                self.connection.close()
                self.connection = http.client.HTTPConnection("127.0.0.1", self.port, timeout=60)
                if attempt:
                    raise
        raise AssertionError("unreachable")


def percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(fraction * (len(ordered) - 1)))] if ordered else float("nan")
