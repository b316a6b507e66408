"""Why a node's engine did not answer, in plain words, from whatever exception the client raised.

The Docker SDK and requests wrap the socket's error in layers whose text is Python's repr
(`HTTPConnectionPool(host=..., port=...): Max retries exceeded ... (Caused by
NewConnectionError("<urllib3.connection.HTTPConnection object at 0x7f...>: Failed to establish a
new connection: [Errno 111] Connection refused"))`). People see a node's down reason and a lost
task's diagnostics: they get the cause (`connection refused`, `timed out after 5 s`); the whole
chain goes to the log. Pure: it reads the exception it is given, nothing else.
"""

from __future__ import annotations

import re

from catalogue import Message

# (what the chain's text says, the plain words), the first that matches wins: the socket's own
# error is the cause, whatever layer carries it.
_CAUSES: list[tuple[re.Pattern[str], Message]] = [
    (re.compile(r"Connection refused|ECONNREFUSED|Errno 111\b"), Message.of("node.cause.refused")),
    (
        re.compile(r"Name or service not known|Failed to resolve|Temporary failure in name resolution|nodename nor"),
        Message.of("node.cause.no_host_name"),
    ),
    (re.compile(r"No route to host|Errno 113\b"), Message.of("node.cause.no_route")),
    (re.compile(r"Network is unreachable|Errno 101\b"), Message.of("node.cause.unreachable")),
    (re.compile(r"FileNotFoundError|No such file or directory"), Message.of("node.cause.no_socket")),
    (re.compile(r"Permission denied|PermissionError"), Message.of("node.cause.permission_denied")),
    (
        re.compile(r"Connection reset|Connection aborted|RemoteDisconnected|Connection broken|BrokenPipe"),
        Message.of("node.cause.closed"),
    ),
]
_TIMED_OUT = re.compile(r"timed out|Timeout|TimeoutError")
_HTTP = re.compile(r"\b(?P<code>[45]\d\d) (?:Client|Server) Error(?: for (?:url: )?\S+)?:? ?(?P<words>[^(\n]*)")
_OBJECT_REPR = re.compile(r"<[\w.]+ object at 0x[0-9a-f]+>:? ?")


def _chain(exc: BaseException) -> list[BaseException]:
    seen: list[BaseException] = []
    current: BaseException | None = exc
    while current is not None and current not in seen and len(seen) < 10:
        seen.append(current)
        current = current.__cause__ or current.__context__
    return seen


def plain_cause(exc: BaseException, timeout_s: float | None = None) -> Message | str:
    """The cause in a few words, as a message when the portal knows it (`connection refused: ...`,
    `timed out after 5 s`, `it answered HTTP 404 (Not Found)`); else the error's own last words
    without Python's object reprs."""
    chain = _chain(exc)
    text = " ".join(f"{type(error).__name__}: {error}" for error in chain)
    for pattern, cause in _CAUSES:
        if pattern.search(text):
            return cause
    if any(isinstance(error, TimeoutError) for error in chain) or _TIMED_OUT.search(text):
        return (
            Message.of("node.cause.timed_out_after", seconds=number(timeout_s))
            if timeout_s
            else Message.of("node.cause.timed_out")
        )
    if http := _HTTP.search(text):
        words = http["words"].strip().rstrip(".")
        return (
            Message.of("node.cause.http_saying", code=http["code"], words=words)
            if words
            else Message.of("node.cause.http", code=http["code"])
        )
    said = _OBJECT_REPR.sub("", str(exc)).strip() or type(exc).__name__
    return said if len(said) <= 200 else said[:199] + "…"


def engine_silent(docker_url: str | None, exc: BaseException, timeout_s: float) -> Message:
    """`the Docker engine at tcp://10.0.0.2:2375 does not answer (timed out after 5 s)`."""
    cause = plain_cause(exc, timeout_s)
    return (
        Message.of("node.docker_silent", url=docker_url, cause=cause)
        if docker_url
        else Message.of("node.docker_socket_silent", cause=cause)
    )


def engine_lost(docker_url: str | None, exc: BaseException, timeout_s: float) -> Message:
    """A task's diagnostics when a poll finds its node's engine silent: `the node's Docker engine
    (tcp://10.0.0.2:2375) does not answer: timed out after 5 s`."""
    cause = plain_cause(exc, timeout_s)
    return (
        Message.of("exit.engine_silent", url=docker_url, cause=cause)
        if docker_url
        else Message.of("exit.engine_socket_silent", cause=cause)
    )


def number(value: float) -> int | float:
    """A number as a message's parameter says it: 5 for 5.0, 0.3 as it is (Python's `%g`)."""
    return int(value) if float(value).is_integer() else float(f"{value:g}")
