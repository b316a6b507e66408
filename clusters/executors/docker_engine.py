"""A node's Docker engine as the Docker executor's parts reach it: its clients, and its errors in words."""

from __future__ import annotations

from typing import Any

import docker
import requests
from docker.errors import APIError, DockerException

from clusters.executors.base import Failure

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
