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

# (what the chain's text says, the plain words), the first that matches wins: the socket's own
# error is the cause, whatever layer carries it.
_CAUSES: list[tuple[re.Pattern[str], str]] = [
    (re.compile(r"Connection refused|ECONNREFUSED|Errno 111\b"), "connection refused: nothing listens there"),
    (
        re.compile(r"Name or service not known|Failed to resolve|Temporary failure in name resolution|nodename nor"),
        "its host name does not resolve",
    ),
    (re.compile(r"No route to host|Errno 113\b"), "no route to the host"),
    (re.compile(r"Network is unreachable|Errno 101\b"), "its network is unreachable"),
    (re.compile(r"FileNotFoundError|No such file or directory"), "no socket at that path"),
    (re.compile(r"Permission denied|PermissionError"), "permission denied"),
    (
        re.compile(r"Connection reset|Connection aborted|RemoteDisconnected|Connection broken|BrokenPipe"),
        "the connection was closed before an answer",
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


def plain_error(exc: BaseException, timeout_s: float | None = None) -> str:
    """The cause in a few words: `connection refused: ...`, `timed out after 5 s`, `it answered
    HTTP 404 (Not Found)`; else the error's own last words without Python's object reprs."""
    chain = _chain(exc)
    text = " ".join(f"{type(error).__name__}: {error}" for error in chain)
    for pattern, words in _CAUSES:
        if pattern.search(text):
            return words
    if any(isinstance(error, TimeoutError) for error in chain) or _TIMED_OUT.search(text):
        return f"timed out after {timeout_s:g} s" if timeout_s else "timed out"
    if http := _HTTP.search(text):
        words = http["words"].strip().rstrip(".")
        return f"it answered HTTP {http['code']}" + (f" ({words})" if words else "")
    said = _OBJECT_REPR.sub("", str(exc)).strip() or type(exc).__name__
    return said if len(said) <= 200 else said[:199] + "…"
