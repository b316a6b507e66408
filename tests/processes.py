"""Servers the tests start (slapd, the OpenID provider, the served portal): a free port to give
them, and stopping one politely, then firmly."""

from __future__ import annotations

import socket
import subprocess
from typing import Any


def free_port() -> int:
    """A port of 127.0.0.1 the kernel just gave out (the caller retries if something took it)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def stop(process: subprocess.Popen[Any], timeout: float = 10) -> None:
    """SIGTERM, and SIGKILL after `timeout` seconds."""
    if process.poll() is None:
        process.terminate()
        try:
            process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
