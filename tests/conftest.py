"""Shared fixtures. Real Docker / browser tests fail (not skip) in CI when their engine is missing."""

import os
from typing import Any

import pytest

IN_CI = os.environ.get("CI", "").lower() in {"1", "true", "yes"}

# Debian's Chromium, driven by Playwright (never a downloaded browser), headless in a container.
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


def normalized_spec(name: str, roles: dict[str, int], command: str = "echo hi", **top: Any) -> dict[str, Any]:
    """A small normalized v2 spec, as jobs.protocol.load returns it, for rows made without submitting."""
    from django.conf import settings

    return {
        "protocolVersion": 2,
        "name": name,
        "type": "job",
        "jobRetryCount": 0,
        "prerequisites": [{"name": "image", "type": "dockerimage", "uri": settings.PAI_DEFAULT_IMAGE}],
        "parameters": {},
        "secrets": {},
        "defaults": {"virtualCluster": "default"},
        "taskRoles": {
            role: {
                "instances": count,
                "completion": {"minFailedInstances": 1, "minSucceededInstances": None},
                "taskRetryCount": 0,
                "dockerImage": "image",
                "resourcePerInstance": {"cpu": 1, "memoryMB": 256, "gpu": 0, "ports": {}},
                "commands": [command],
            }
            for role, count in roles.items()
        },
        **top,
    }


def processes_running(*argv: str) -> list[int]:
    """Host pids whose command line is exactly argv (a sandboxed task's pids mean nothing outside
    its pid namespace, so tests find its processes by a command line of their own, e.g. `sleep 301.7`)."""
    from pathlib import Path

    wanted = "\0".join(argv).encode() + b"\0"
    found = []
    for proc in Path("/proc").iterdir():
        if proc.name.isdigit():
            try:
                if (proc / "cmdline").read_bytes() == wanted:
                    found.append(int(proc.name))
            except OSError:
                continue
    return found


def require(available: bool, what: str) -> None:
    """Skip locally when a real part is missing; in CI that is a failure, never a skip."""
    if available:
        return
    if IN_CI or os.environ.get("PAI_REQUIRE_REAL_PARTS"):
        pytest.fail(f"{what} is required in CI but is not available")
    pytest.skip(f"{what} not available")


@pytest.fixture
def user(django_user_model):
    return django_user_model.objects.create_user("alice", password="alice-password-1")


@pytest.fixture
def other_user(django_user_model):
    return django_user_model.objects.create_user("bob", password="bob-password-1")


@pytest.fixture
def admin_user(django_user_model):
    return django_user_model.objects.create_superuser("root", email="", password="root-password-1")


@pytest.fixture
def default_vc(db):
    """The `default` VC a data migration creates; transactional tests flush it away, so make sure."""
    from clusters.models import VirtualCluster

    return VirtualCluster.objects.get_or_create(name="default", defaults={"share_percent": 100})[0]


@pytest.fixture(scope="session")
def asgi_live_server():
    """The portal's ASGI app (HTTP + websockets) under daphne in a thread; one per session."""
    from tests.live_asgi import AsgiLiveServer

    server = AsgiLiveServer()
    server.start()
    yield server
    server.stop()
