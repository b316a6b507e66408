"""The job exit spec: turns how a task ended into a code, an explanation and a retry behaviour.

Pure Python. The table lives in exit_spec.yaml beside this module (OpenPAI's codes and phrases).
`classify()` maps what an executor saw (exit status, OOM flag, platform failure, log tail, stop
request) to one row; `spec_row()` is the API's `appExitSpec` for a recorded code; `exit_info()`
explains a code that was already classified (never re-maps it).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from enum import IntEnum
from functools import cache
from pathlib import Path
from typing import Any, Literal

import yaml

SPEC_PATH = Path(__file__).parent / "exit_spec.yaml"

Behaviour = Literal["transient", "permanent", "unknown"]


class ExitCode(IntEnum):
    """Every code exit_spec.yaml has a row for (tests/exitspec checks both ways)."""

    SUCCEEDED = 0
    STOP_REQUESTED = -210
    FRAMEWORK_ATTEMPT_COMPLETION = -220  # tasks still running when their job completed
    EVICTED = -1000  # the task vanished from its node
    NODE_LOST = -1001  # the node's engine stopped answering
    OOM_KILLED = -1200
    CONTAINER_CREATE_FAILED = -1201
    START_PERMISSION_DENIED = -1202
    START_COMMAND_NOT_FOUND = -1203
    CONTAINER_START_FAILED = -1204
    STORAGE_MOUNT_FAILED = -1210  # the portal's own row: the node could not mount a storage
    TIME_LIMIT_EXCEEDED = -1230  # the portal's own row: the job reached its time limit
    SIGINT = 130
    SIGQUIT = 131
    SIGILL = 132
    SIGABRT = 134
    SIGBUS = 135
    SIGFPE = 136
    SIGKILL = 137
    SIGSEGV = 139
    SIGPIPE = 141
    SIGTERM = 143
    COMMAND_NOT_FOUND = 220
    SSH_BARRIER_TIMEOUT = 249
    GANG_ALLOCATION_TIMEOUT = 251
    PORT_CONFLICT = 253
    IMAGE_NOT_FOUND = 254
    UNKNOWN_USER_FAILURE = 255
    UNDEFINED_POSITIVE = 256
    UNDEFINED_NEGATIVE = -8000


# Popen reports a process killed by signal N as -N; a shell reports 128 + N.
_MAX_SIGNAL = 64
_SIGNAL_BASE = 128


@dataclass(frozen=True)
class ExitInfo:
    code: int  # the portal's exit code (a spec code, or the raw code when only a fallback row explains it)
    user_code: int | None  # what the user's process itself returned, kept beside the mapped code
    phrase: str
    type: str  # USER_SUCCESS, USER_STOP, USER_FAILURE, PLATFORM_FAILURE, RESOURCE_ALLOCATION_TIMEOUT, UNKNOWN_FAILURE
    behaviour: Behaviour  # transient: always retried, free; permanent: never; unknown: up to the retry count
    reason: str
    solution: tuple[str, ...]

    @property
    def succeeded(self) -> bool:
        return self.code == ExitCode.SUCCEEDED


@dataclass(frozen=True)
class _Pattern:
    exit_code: int | None
    user_log: re.Pattern[str] | None

    def matches(self, exit_code: int, log_tail: str) -> bool:
        if self.exit_code is not None and self.exit_code != exit_code:
            return False
        return self.user_log is None or bool(self.user_log.search(log_tail))


@cache
def _rows() -> dict[int, dict[str, Any]]:
    with SPEC_PATH.open(encoding="utf-8") as spec_file:
        rows = yaml.safe_load(spec_file)
    return {int(row["code"]): row for row in rows}


@cache
def _patterns() -> tuple[tuple[int, _Pattern], ...]:
    found = []
    for code, row in _rows().items():
        pattern = row.get("pattern")
        if pattern:
            regex = pattern.get("userLogRegex")
            found.append((code, _Pattern(pattern.get("exitCode"), re.compile(regex) if regex else None)))
    return tuple(found)


def _row_for(code: int) -> dict[str, Any]:
    """The row that explains a code: its own, or the fallback row for its sign."""
    rows = _rows()
    if code in rows:
        return rows[code]
    return rows[ExitCode.UNDEFINED_NEGATIVE if code < 0 else ExitCode.UNDEFINED_POSITIVE]


def _info(code: int, user_code: int | None, row: dict[str, Any], reason: str | None = None) -> ExitInfo:
    return ExitInfo(
        code=int(code),
        user_code=user_code,
        phrase=row["phrase"],
        type=row["type"],
        behaviour=row["behaviour"],
        reason=reason or row["reason"],
        solution=tuple(row.get("solution") or ()),
    )


def exit_info(code: int, user_code: int | None = None) -> ExitInfo:
    """Explain a code that is already a portal exit code (as recorded); no re-mapping."""
    return _info(code, user_code, _row_for(code))


def spec_row(code: int) -> dict[str, Any]:
    """The API's appExitSpec for a recorded code, in OpenPAI's shape (fallback rows keep the raw code)."""
    row = _row_for(code)
    return {
        "code": code,
        "phrase": row["phrase"],
        "issuer": row.get("issuer"),
        "causer": row.get("causer"),
        "type": row["type"],
        "stage": row.get("stage"),
        "behavior": row["behaviour"].upper(),
        "behaviour": row["behaviour"],
        "reaction": row.get("reaction"),
        "reason": row["reason"],
        "solution": list(row.get("solution") or []),
    }


def _normalise_signal(exit_code: int) -> int:
    if -_MAX_SIGNAL <= exit_code < 0:
        return _SIGNAL_BASE - exit_code
    return exit_code


def classify(
    exit_code: int | None,
    *,
    oom_killed: bool = False,
    platform_exit_code: int | None = None,
    log_tail: str = "",
    stopped: bool = False,
) -> ExitInfo:
    """Map how a task ended to its exit-spec row.

    Precedence: a user's stop request, then an OOM kill, then a failure the platform itself
    reported (platform_exit_code, e.g. -1001 node lost, 254 image missing), then the user
    process's own status: 0, a log pattern (127 + "command not found" -> 220), a known signal
    (130..143), any other exit 1..255 -> 255 with the user's code kept. Codes the spec does not
    know keep their raw value and are explained by the fallback rows 256 / -8000.
    """
    if stopped:
        return _info(ExitCode.STOP_REQUESTED, exit_code, _rows()[ExitCode.STOP_REQUESTED])
    if oom_killed:
        return _info(ExitCode.OOM_KILLED, exit_code, _rows()[ExitCode.OOM_KILLED])
    if platform_exit_code is not None:
        return _info(platform_exit_code, exit_code, _row_for(platform_exit_code))
    if exit_code is None:
        return _info(
            ExitCode.UNDEFINED_NEGATIVE,
            None,
            _rows()[ExitCode.UNDEFINED_NEGATIVE],
            "The task ended without an exit code",
        )
    status = _normalise_signal(exit_code)
    rows = _rows()
    if status == ExitCode.SUCCEEDED:
        return _info(ExitCode.SUCCEEDED, exit_code, rows[ExitCode.SUCCEEDED])
    for code, pattern in _patterns():
        if pattern.matches(status, log_tail):
            return _info(code, exit_code, rows[code])
    if status < 0:
        # PAI's own negative codes (e.g. a recorded -1200) explain themselves.
        return _info(status, exit_code, _row_for(status))
    if _SIGNAL_BASE < status <= _SIGNAL_BASE + _MAX_SIGNAL and status in rows:
        return _info(status, exit_code, rows[status])
    if status <= ExitCode.UNKNOWN_USER_FAILURE:
        reason = f"{rows[ExitCode.UNKNOWN_USER_FAILURE]['reason']} (the command exited with code {exit_code})"
        return _info(ExitCode.UNKNOWN_USER_FAILURE, exit_code, rows[ExitCode.UNKNOWN_USER_FAILURE], reason)
    return _info(status, exit_code, rows[ExitCode.UNDEFINED_POSITIVE])
