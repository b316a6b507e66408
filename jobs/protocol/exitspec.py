"""The job exit spec: turns how a task ended into a code, an explanation and a retry behaviour.

Pure Python. The table lives in exit_spec.yaml beside this module (all 62 of OpenPAI's codes,
phrases and runtime failure patterns). `classify()` maps what an executor saw (exit status, OOM
flag, platform failure, log tail, stop request) to one row; `match_log()` is its reading of the
log's end (OpenPAI's `runtimeContainerPatterns`: a CUDA OOM is 226, a ModuleNotFoundError 232);
`spec_row()` is the API's `appExitSpec` for a recorded code; `exit_info()` explains a code that
was already classified (never re-maps it); `recorded_match()` finds the log line that explained
a recorded code again, for the page's and the API's "what to change".
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from enum import IntEnum
from functools import cache
from pathlib import Path
from typing import Any, Literal

import yaml

from catalogue import Message

SPEC_PATH = Path(__file__).parent / "exit_spec.yaml"
# libyaml reads the table in a tenth of the pure-Python parser's 0.1 s, which every process that
# imports the scheduler (the portal, the scheduler, each test worker) paid at import.
_LOADER: Any = yaml.CSafeLoader if yaml.__with_libyaml__ else yaml.SafeLoader

Behaviour = Literal["transient", "permanent", "unknown"]


class ExitCode(IntEnum):
    """Every code exit_spec.yaml has a row for (tests/exitspec checks both ways)."""

    SUCCEEDED = 0
    # OpenPAI's Kubernetes-side codes the portal never produces (explained all the same).
    CONFIG_MAP_EXTERNAL_DELETED = -100
    POD_EXTERNAL_DELETED = -101
    CONFIG_MAP_CACHE_TIMEOUT = -110
    POD_CACHE_TIMEOUT = -111
    POD_CREATION_TRANSIENT_ERROR = -120
    POD_CREATION_PERMANENT_ERROR = -200
    STOP_REQUESTED = -210
    FRAMEWORK_ATTEMPT_COMPLETION = -220  # tasks still running when their job completed
    DELETE_TASK_REQUESTED = -230
    POD_FAILED_WITHOUT_FAILED_CONTAINER = -300
    POD_CREATION_UNKNOWN_ERROR = -310
    EVICTED = -1000  # the task vanished from its node
    NODE_LOST = -1001  # the node's engine stopped answering
    INSUFFICIENT_RESOURCE_NODE = -1002
    PREEMPTED_FOR_CRITICAL_POD = -1003
    DEADLINE_EXCEEDED = -1004
    NODE_ADMISSION_FORBIDDEN = -1005
    NODE_ADMISSION_UNEXPECTED_ERROR = -1006
    CREATE_FRAMEWORK_PERMANENT_FAILED = -1100
    INIT_CONTAINER_OOM_KILLED = -1300
    OOM_KILLED = -1200
    CONTAINER_CREATE_FAILED = -1201
    START_PERMISSION_DENIED = -1202
    START_COMMAND_NOT_FOUND = -1203
    CONTAINER_START_FAILED = -1204
    GPU_DEVICE_NOT_FOUND = -1205
    STORAGE_MOUNT_FAILED = -1210  # the portal's own row: the node could not mount a storage
    TIME_LIMIT_EXCEEDED = -1230  # the portal's own row: the job reached its time limit
    GPU_ECC_MAYBE = 128
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
    # 221-235: recognised from the end of the task's log (exit_spec.yaml's patterns).
    TENSORFLOW_OOM = 221
    MPI_SEGV = 222
    GPU_ECC_UNCORRECTABLE = 223
    CUDA_VERSION_MISMATCH = 224
    CUDNN_VERSION_MISMATCH = 225
    CUDA_OOM = 226
    INCORRECT_PARAMETER = 228
    INCORRECT_DATA = 229
    INVALID_SAVE_PATH = 230
    SYNTAX_ERROR = 231
    IMPORT_ERROR = 232
    INDEX_OUT_OF_RANGE = 233
    SEGMENTATION_FAULT = 234
    CORE_DUMPED = 235
    SSH_BARRIER_TIMEOUT = 249
    BARRIER_TRANSIENT_FAILED = 250
    GANG_ALLOCATION_TIMEOUT = 251
    BARRIER_PERMANENT_FAILED = 252
    PORT_CONFLICT = 253
    IMAGE_NOT_FOUND = 254
    UNKNOWN_USER_FAILURE = 255
    UNDEFINED_POSITIVE = 256
    UNDEFINED_NEGATIVE = -8000


# The end of a task's log the patterns read, and the longest line they read (or show) of it.
LOG_TAIL_BYTES = 64 * 1024
LINE_CAP = 4096
LINE_SHOWN = 500

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
    reason: Message  # the spec row's reason (SPEC_REASON), or the portal's own words for this exit
    solution: tuple[str, ...]
    match: LogMatch | None = None  # the log pattern that explained the exit, if one did

    @property
    def succeeded(self) -> bool:
        return self.code == ExitCode.SUCCEEDED


@dataclass(frozen=True)
class _Pattern:
    code: int
    name: str  # keys the "what to change" line (web.fixes); "" for a bare exit-code pattern
    exit_code: int | None
    user_log: re.Pattern[str] | None

    def matches(self, exit_code: int) -> bool:
        return self.exit_code is None or self.exit_code == exit_code


@dataclass(frozen=True)
class LogMatch:
    """Which pattern of the spec an exit matched: its code, its name and the log line it matched
    (with the named groups a pattern captured, e.g. the missing module)."""

    code: int
    name: str
    line: str = ""
    groups: tuple[tuple[str, str], ...] = ()

    def group(self, key: str) -> str:
        return dict(self.groups).get(key, "")


@cache
def _rows() -> dict[int, dict[str, Any]]:
    with SPEC_PATH.open(encoding="utf-8") as spec_file:
        rows = yaml.load(spec_file, Loader=_LOADER)  # noqa: S506 (a safe loader)
    return {int(row["code"]): row for row in rows}


@cache
def _patterns() -> tuple[_Pattern, ...]:
    """Every runtime pattern, in the file's order (OpenPAI: the first matching code wins)."""
    found = []
    for code, row in _rows().items():
        for pattern in (row.get("pattern") or {}).get("runtimeContainerPatterns") or ():
            regex = pattern.get("userLogRegex")
            found.append(
                _Pattern(
                    code,
                    pattern.get("name", ""),
                    pattern.get("exitCode"),
                    re.compile(regex, re.MULTILINE) if regex else None,
                )
            )
    return tuple(found)


def pattern_names() -> tuple[str, ...]:
    """The names of the log patterns, once each, in the file's order."""
    return tuple(dict.fromkeys(p.name for p in _patterns() if p.user_log is not None and p.name))


def bounded_log(log_tail: str) -> str:
    """What the patterns read: the last LOG_TAIL_BYTES of the log, each line cut at LINE_CAP
    characters, so no user's log can make a pattern slow."""
    tail = log_tail[-LOG_TAIL_BYTES:]
    return "\n".join(line[:LINE_CAP] for line in tail.splitlines())


def _search(pattern: _Pattern, text: str) -> LogMatch | None:
    if pattern.user_log is None:
        return LogMatch(pattern.code, pattern.name)
    found = pattern.user_log.search(text)
    if found is None:
        return None
    start = text.rfind("\n", 0, found.start()) + 1
    end = text.find("\n", found.end())
    line = text[start : end if end >= 0 else len(text)].strip()
    groups = tuple((key, value) for key, value in found.groupdict().items() if value)
    return LogMatch(pattern.code, pattern.name, line[:LINE_SHOWN], groups)


def match_log(status: int, log_tail: str, *, code: int | None = None) -> LogMatch | None:
    """The first spec pattern a user exit matches: `status` is the exit status as a shell reports
    it (128 + N for signal N), `log_tail` the end of the task's log. With `code`, only that row's
    patterns are tried (a recorded code's diagnosis, worked out again from its log). An exit by a
    signal the spec knows keeps the signal's code; its row's log patterns (an NCCL timeout's
    abort, a data-loader worker's bus error) may still say why."""
    text = bounded_log(log_tail)
    if code is None and _SIGNAL_BASE < status <= _SIGNAL_BASE + _MAX_SIGNAL and status in _rows():
        code = status
    for pattern in _patterns():
        if (code is not None and pattern.code != code) or not pattern.matches(status):
            continue
        if code is None and pattern.user_log is None and pattern.exit_code is None:
            continue
        found = _search(pattern, text)
        if found is not None:
            return found
    return None


def _row_for(code: int) -> dict[str, Any]:
    """The row that explains a code: its own, or the fallback row for its sign."""
    rows = _rows()
    if code in rows:
        return rows[code]
    return rows[ExitCode.UNDEFINED_NEGATIVE if code < 0 else ExitCode.UNDEFINED_POSITIVE]


def _info(
    code: int, user_code: int | None, row: dict[str, Any], reason: Message | None = None, match: LogMatch | None = None
) -> ExitInfo:
    return ExitInfo(
        code=int(code),
        user_code=user_code,
        phrase=row["phrase"],
        type=row["type"],
        behaviour=row["behaviour"],
        reason=reason or Message.of("exit.spec_reason", spec_reason=row["reason"]),
        solution=tuple(row.get("solution") or ()),
        match=match,
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
    process's own status: 0, a known signal (130..143, with the log pattern of its row that says
    why, if any), a log pattern (127 + "command not found" -> 220, "CUDA out of memory" -> 226,
    ModuleNotFoundError -> 232... see match_log), any other exit 1..255 -> 255 with the user's code
    kept. Codes the spec does not
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
            Message.of("exit.no_exit_code"),
        )
    status = _normalise_signal(exit_code)
    rows = _rows()
    if status == ExitCode.SUCCEEDED:
        return _info(ExitCode.SUCCEEDED, exit_code, rows[ExitCode.SUCCEEDED])
    if status > 0:
        found = match_log(status, log_tail)
        if found is not None:
            return _info(found.code, exit_code, rows[found.code], match=found)
    if status < 0:
        # PAI's own negative codes (e.g. a recorded -1200) explain themselves.
        return _info(status, exit_code, _row_for(status))
    if _SIGNAL_BASE < status <= _SIGNAL_BASE + _MAX_SIGNAL and status in rows:
        return _info(status, exit_code, rows[status])
    if status <= ExitCode.UNKNOWN_USER_FAILURE:
        spec_reason = Message.of("exit.spec_reason", spec_reason=rows[ExitCode.UNKNOWN_USER_FAILURE]["reason"])
        reason = Message.of("exit.command_exited", reason=spec_reason, code=exit_code)
        return _info(ExitCode.UNKNOWN_USER_FAILURE, exit_code, rows[ExitCode.UNKNOWN_USER_FAILURE], reason)
    return _info(status, exit_code, rows[ExitCode.UNDEFINED_POSITIVE])


def recorded_match(code: int | None, user_code: int | None, log_tail: str) -> LogMatch | None:
    """The log pattern that explains a recorded code (None for a code no log pattern gives):
    for the job page and the API, worked out again from the task's log."""
    if code is None or not any(p.code == code and p.user_log is not None for p in _patterns()):
        return None
    found = match_log(_normalise_signal(user_code if user_code is not None else code), log_tail, code=code)
    return found if found is not None and found.name else None
