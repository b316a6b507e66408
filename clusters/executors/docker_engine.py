"""A node's Docker engine as the Docker executor's parts reach it: its clients, the marker its
containers and networks carry, and its errors in words."""

from __future__ import annotations

import threading
from collections.abc import Mapping
from typing import Any

import docker
import requests
from docker.errors import APIError, DockerException
from docker.transport import UnixHTTPAdapter

from clusters.executors.base import Failure

MARKER_LABEL = "pai.portal"  # value: the executor's namespace
# Several portals (or test runs) may share one engine: names and the marker carry a namespace
# (settings.PAI_DOCKER_NAMESPACE, handed in by the registry).
DEFAULT_NAMESPACE = "pai"

# What a call to the engine raises: its refusals (APIError), a socket's troubles, the client's own.
ENGINE_ERRORS = (APIError, requests.exceptions.RequestException, DockerException)


def client(docker_url: str | None, *, timeout: float | None, version: str | None = None) -> docker.APIClient:
    """A low-level client of the engine (`docker_url` None: the local socket), its connections
    to a unix socket in one pool (SocketPool), the environment's proxies read once (not per call)."""
    kwargs: dict[str, Any] = {"timeout": timeout}
    if version:
        kwargs["version"] = version
    if docker_url:
        kwargs["base_url"] = docker_url
    api = docker.APIClient(**kwargs)
    # requests reads the environment's proxies and stats ~/.netrc on every request (trust_env):
    # a third of an inspection's CPU at 200 exits a second (bench/running_scale.py). The proxies
    # (a TCP engine's; a unix socket takes none) are read here once; a netrc means nothing to an engine.
    api.proxies = requests.utils.get_environ_proxies(api.base_url)
    api.trust_env = False
    made = api.adapters.get("http+docker://")
    if isinstance(made, UnixHTTPAdapter):
        one = SocketPool(made.socket_path, made.timeout, pool_connections=1, max_pool_size=made.max_pool_size)
        api.mount("http+docker://", one)  # (every request's URL: http+docker://localhost/...)
        made.close()  # (the connection that asked the engine's API version)
    return api


class SocketPool(UnixHTTPAdapter):
    """docker-py's unix-socket adapter keyed a connection pool by each request's URL, keeping the
    25 last used, an idle connection each: every container inspected, every job's listing was a
    pool of its own, so each engine held 25 connections of each client (12,500 sockets on each
    side at 500 nodes: bench/running_scale.py). One pool for the socket: a connection per call in
    flight, kept for the next one."""

    def get_connection(self, url: str | bytes, proxies: Mapping[str, str] | None = None) -> Any:
        return super().get_connection("http+docker://socket", proxies)


class Engine:
    """One node's engine (`docker_url` None: the local socket), its client made on first use: an
    engine that is down must not break import."""

    def __init__(self, docker_url: str | None, *, timeout: int) -> None:
        self.docker_url = docker_url
        self.timeout = timeout
        self._api: docker.APIClient | None = None
        self._probe: docker.APIClient | None = None
        self._probe_lock = threading.Lock()
        self._cpus: int | None = None

    @property
    def api(self) -> docker.APIClient:
        if self._api is None:
            self._api = client(self.docker_url, timeout=self.timeout)
        return self._api

    def ping(self, timeout: float) -> None:
        """A ping on a short-timeout client of its own (a hung engine holds the caller `timeout`
        seconds at most), kept: one connection for every ping, the API version asked once."""
        with self._probe_lock:
            if self._probe is None:
                self._probe = client(self.docker_url, timeout=timeout)
            probe = self._probe
        probe.ping()

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
