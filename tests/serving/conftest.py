"""The portal served as `make run` serves it (`manage.py serve`: granian, 2 worker processes) on
the test database, and raw-socket helpers for clients that misbehave."""

from __future__ import annotations

import http.client
import json
import os
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from accounts.tokens import issue_token
from tests.processes import free_port
from tests.scheduler.test_two_schedulers import database_env

ROOT = Path(__file__).resolve().parents[2]
SERVED_AT = ("PAI_PUBLIC_URL", "PAI_BIND", "PAI_PORT")
# Modules only one command or feature needs (tests/serving/test_django_start.py).
LEFT_OUT = ("twisted", "daphne.server", "autobahn", "asyncssh", "optuna")
PROBE = (
    "import django, json, sys; django.setup(); from django.conf import settings; "
    f"print(json.dumps({{'imported': [m for m in {LEFT_OUT!r} if m in sys.modules], "
    "'public_url': settings.PAI_PUBLIC_URL}))"
)


def served_env(tmp_path: Path, **variables: str) -> dict[str, str]:
    """This environment without where the portal is served, with `variables` (and its own var dir)."""
    env = {k: v for k, v in os.environ.items() if k not in SERVED_AT}
    env.update(DJANGO_SETTINGS_MODULE="pai_portal.settings", PAI_VAR_DIR=str(tmp_path), **variables)
    return env


@pytest.fixture(scope="session")
def django_start(tmp_path_factory) -> dict[str, Any]:
    """One real start of Django in a subprocess (as `manage.py` starts it) of a portal served on
    0.0.0.0:34000: what it imported of LEFT_OUT and the PAI_PUBLIC_URL it made (a start costs a
    second of CPU: the tests that need one share it)."""
    done = subprocess.run(
        [sys.executable, "-c", PROBE],
        cwd=ROOT,
        env=served_env(tmp_path_factory.mktemp("start"), PAI_BIND="0.0.0.0", PAI_PORT="34000"),
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    return json.loads(done.stdout.strip().splitlines()[-1])


@dataclass
class ServedPortal:
    port: int
    process: subprocess.Popen

    def get(self, path: str, token: str = "", timeout: float = 10) -> tuple[int, bytes, float]:
        """(status, body, seconds) of one GET on a fresh connection."""
        connection = http.client.HTTPConnection("127.0.0.1", self.port, timeout=timeout)
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        began = time.perf_counter()
        try:
            connection.request("GET", path, headers=headers)
            response = connection.getresponse()
            return response.status, response.read(), time.perf_counter() - began
        finally:
            connection.close()

    def raw(self, request: bytes, receive_buffer: int = 4096) -> socket.socket:
        """A socket that sent `request` and will read nothing unless the test reads it."""
        client = socket.socket()
        client.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, receive_buffer)
        client.connect(("127.0.0.1", self.port))
        client.sendall(request)
        return client


def wait_until_serving(port: int, process: subprocess.Popen, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"manage.py serve exited with {process.returncode}")
        try:
            connection = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
            connection.request("GET", "/api/v2/info")
            if connection.getresponse().status == 200:
                return
        except (OSError, http.client.HTTPException):
            time.sleep(0.2)
    raise RuntimeError("manage.py serve did not answer")


@pytest.fixture
def serve(transactional_db, tmp_path) -> Iterator[Callable[..., ServedPortal]]:
    """Start `manage.py serve` with extra environment variables (timeouts...); stopped after."""
    started: list[subprocess.Popen] = []

    def start(port: int | None = None, **env: str) -> ServedPortal:
        port = port or free_port()
        environment = {
            **os.environ,
            **database_env(),
            "PAI_LOG_DIR": str(tmp_path / "logs"),
            "PAI_LOG_LEVEL": "WARNING",
            **env,
        }
        log = (tmp_path / f"serve-{port}.log").open("wb")
        process = subprocess.Popen(
            [sys.executable, "manage.py", "serve", "--port", str(port), "--workers", "2"],
            cwd=ROOT,
            env=environment,
            stdout=log,
            stderr=subprocess.STDOUT,
        )
        started.append(process)
        wait_until_serving(port, process)
        return ServedPortal(port, process)

    yield start
    for process in started:
        process.terminate()
    for process in started:
        try:
            process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            process.kill()


@pytest.fixture
def token(user) -> str:
    return issue_token(user)[0]
