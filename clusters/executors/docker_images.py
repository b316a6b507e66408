"""A task's image: pulled when the engine lacks it, and why a pull failed in the portal's words."""

from __future__ import annotations

import logging
import re
from http import HTTPStatus

import docker
import requests
from docker.auth import resolve_repository_name
from docker.errors import APIError
from docker.utils import parse_repository_tag

from catalogue import Message
from clusters.executors.base import ExecutorError, Failure
from clusters.executors.docker_engine import explain

log = logging.getLogger("pai.executors.docker")

# The engine refuses a malformed image name with this (a job submitted before the portal checked
# references): the user's to fix, so exit 254 (never retried), not an unknown create failure.
INVALID_REFERENCE = "invalid reference format"
AUTH_SIGNS = ("unauthorized", "authentication required", "no basic auth", "denied")
UNREACHABLE_SIGNS = ("no such host", "connection refused", "dial tcp", "timeout", "i/o timeout", "no route to host")
NOT_FOUND_SIGNS = ("manifest unknown", "not found")


def pull_failure_message(image: str, reason: str, with_credentials: bool) -> Message:
    """What failed, in the portal's words: the engine's own text may quote the page the registry
    answered, and an image may name any HTTP service as its registry (a probe of the node's
    loopback): that text is for the node's log, never for the user."""
    registry = resolve_repository_name(parse_repository_tag(image)[0])[0]
    return Message.of(
        "exit.pull.failed", image=image, registry=registry, why=_why_pull_failed(reason, with_credentials)
    )


def _why_pull_failed(reason: str, with_credentials: bool) -> Message:
    said = reason.split("response body", 1)[0].lower()  # the engine's words, before the remote page
    status = re.search(r"\bhttp (\d{3})\b", said)
    if any(sign in said for sign in AUTH_SIGNS):
        return (
            Message.of("exit.pull.credentials_refused")
            if with_credentials
            else Message.of("exit.pull.needs_credentials")
        )
    if any(sign in said for sign in UNREACHABLE_SIGNS):
        return Message.of("exit.pull.unreachable")
    if status is not None:
        return Message.of("exit.pull.http", status=_status_words(int(status.group(1))))
    if any(sign in said for sign in NOT_FOUND_SIGNS):
        return Message.of("exit.pull.not_found")
    return Message.of("exit.pull.otherwise")


def _status_words(code: int) -> str:
    try:
        return f"{code} {HTTPStatus(code).phrase}"
    except ValueError:
        return str(code)


def pull(api: docker.APIClient, image: str, auth: dict[str, str] | None) -> None:
    """Pull an image the engine lacks; a failure is exit 254 with a clear reason."""
    repository, tag = parse_repository_tag(image)
    auth_config = None
    if auth:
        auth_config = {"username": auth.get("username", ""), "password": auth.get("password", "")}
        if auth.get("registry"):
            auth_config["serveraddress"] = auth["registry"]
    try:
        api.pull(repository, tag=tag or "latest", auth_config=auth_config)
        api.inspect_image(image)
    except (APIError, requests.exceptions.RequestException) as exc:
        log.warning("pulling %s failed: %s", image, explain(exc))  # the engine's words, for the admin
        raise ExecutorError(
            pull_failure_message(image, explain(exc), auth is not None), Failure.IMAGE_NOT_FOUND
        ) from exc
