"""A node's Docker engine as the Docker executor's parts reach it: its clients, the marker its
containers and networks carry, and its errors in words."""

from __future__ import annotations

from typing import Any

import docker
import requests
from docker.errors import APIError, DockerException

from clusters.executors.base import Failure

MARKER_LABEL = "pai.portal"  # value: the executor's namespace
# Several portals (or test runs) may share one engine: names and the marker carry a namespace
# (settings.PAI_DOCKER_NAMESPACE, handed in by the registry).
DEFAULT_NAMESPACE = "pai"

# What a call to the engine raises: its refusals (APIError), a socket's troubles, the client's own.
ENGINE_ERRORS = (APIError, requests.exceptions.RequestException, DockerException)


def client(docker_url: str | None, *, timeout: int | None, version: str | None = None) -> docker.APIClient:
    """A low-level client of the engine (`docker_url` None: the local socket)."""
    kwargs: dict[str, Any] = {"timeout": timeout}
    if version:
        kwargs["version"] = version
    if docker_url:
        kwargs["base_url"] = docker_url
    return docker.APIClient(**kwargs)


class Engine:
    """One node's engine (`docker_url` None: the local socket), its client made on first use: an
    engine that is down must not break import."""

    def __init__(self, docker_url: str | None, *, timeout: int) -> None:
        self.docker_url = docker_url
        self.timeout = timeout
        self._api: docker.APIClient | None = None
        self._cpus: int | None = None

    @property
    def api(self) -> docker.APIClient:
        if self._api is None:
            self._api = client(self.docker_url, timeout=self.timeout)
        return self._api

    def cpus(self) -> int:
        """Its machine's CPUs (asked once)."""
        if self._cpus is None:
            self._cpus = int(self.api.info().get("NCPU") or 1)
        return self._cpus

    def stream_client(self) -> docker.APIClient:
        """A client of its own for a stream that lasts (one connection each), without a timeout."""
        return client(self.docker_url, timeout=None, version=self.api.api_version)


def marker(namespace: str) -> str:
    """The label filter of what this namespace made on the engine."""
    return f"{MARKER_LABEL}={namespace}"


def explain(exc: BaseException) -> str:
    """The engine's own words for a refusal, else the exception's."""
    if isinstance(exc, APIError) and exc.explanation:
        return str(exc.explanation)
    return str(exc)


def failure_of(exc: Exception) -> Failure:
    """An engine that cannot be reached is a lost node; anything it answered is a create failure."""
    unreachable = isinstance(exc, requests.exceptions.ConnectionError) or (
        isinstance(exc, DockerException) and "Error while fetching server API version" in str(exc)
    )
    return Failure.NODE_LOST if unreachable else Failure.CREATE_FAILED
