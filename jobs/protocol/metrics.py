"""Training metrics as a task reports them, no SDK needed (docs/user/metrics.md): a line
`PAI_METRIC {"step": 100, "loss": 0.31}` on its stdout, or JSON lines appended to the file
`$PAI_METRICS_FILE` names. Pure: bytes in, points out; the sampler reads the files
(scheduling/training_metrics.py).

A line's numbers are its metrics, `step` its step (missing: the one after the task's last). A line
that is not a JSON object with at least one finite number is bad: skipped and counted, never fatal.
"""

from __future__ import annotations

import codecs
import json
import math
import re
from dataclasses import dataclass, field
from math import isfinite
from pathlib import PurePosixPath
from typing import NamedTuple

MARKER = b"PAI_METRIC"
METRICS_FILE_NAME = "pai-metrics.jsonl"  # in the task's work dir: $PAI_METRICS_FILE
MAX_LINE_BYTES = 64 * 1024  # a longer line is bad (and a log's non-metric one skipped)
MAX_NAME_CHARS = 64
MAX_METRICS_PER_LINE = 32
STEP = "step"
_decode = json.JSONDecoder().decode  # (what json.loads uses for a str)


class Point(NamedTuple):
    """(A tuple: made by the thousand each pass, cheaper than a frozen dataclass.)"""

    step: int
    name: str
    value: float


@dataclass
class Reading:
    """What a read of new bytes gave: its points, bad lines, the bytes it used (whole lines only:
    a line still being written waits for the next read) and the step after the last."""

    points: list[Point] = field(default_factory=list)
    bad_lines: int = 0
    consumed: int = 0
    next_step: int = 0


def parse_payload(text: bytes | str, next_step: int) -> list[Point] | None:
    """One line's JSON object as points, or None when it is bad. (Thousands of lines a pass: bytes
    are decoded here as UTF-8 rather than sniffed by json.loads, each value's type tested once.)"""
    try:
        if isinstance(text, bytes):
            text = text.removeprefix(codecs.BOM_UTF8).decode("utf-8", "surrogatepass")
        record = _decode(text)
    except (ValueError, RecursionError):  # (UnicodeDecodeError is a ValueError)
        return None
    if type(record) is not dict:
        return None
    step = record.get(STEP, next_step)
    if type(step) is not int or step < 0 or step >= 2**63:  # (not a bool either)
        return None
    points = []
    for name, value in record.items():
        kind = type(value)
        if kind is int:  # (a bool is no int here)
            try:
                value = float(value)
            except OverflowError:  # an integer past a float's range
                continue
        elif kind is not float:
            continue
        if not isfinite(value) or name == STEP or not 0 < len(name) <= MAX_NAME_CHARS:
            continue
        points.append(Point(step, name, value))
        if len(points) == MAX_METRICS_PER_LINE:
            break
    return points or None


def read_lines(data: bytes, *, marked: bool, next_step: int) -> Reading:
    """The points in `data`'s whole lines. `marked`: a log, where only lines starting with
    PAI_METRIC count (anything else is the task's own output); else a metrics file, every line."""
    reading = Reading(next_step=next_step)
    end = data.rfind(b"\n") + 1
    if end == 0 and len(data) >= MAX_LINE_BYTES:  # one line too long to ever end in a read
        reading.consumed = len(data)
        reading.bad_lines = int(_is_metric_line(data, marked))
        return reading
    reading.consumed = end
    for line in data[:end].split(b"\n"):
        payload = _payload(line, marked)
        if payload is None:
            continue
        points = parse_payload(payload, reading.next_step) if len(line) <= MAX_LINE_BYTES else None
        if points is None:
            reading.bad_lines += 1
            continue
        reading.points.extend(points)
        reading.next_step = points[0].step + 1
    return reading


def _payload(line: bytes, marked: bool) -> bytes | None:
    line = line.strip()
    if not marked:
        return line or None
    if not line.startswith(MARKER) or line[len(MARKER) : len(MARKER) + 1] not in (b" ", b"\t"):
        return None
    return line[len(MARKER) :].strip()


def _is_metric_line(line: bytes, marked: bool) -> bool:
    return not marked or line.lstrip().startswith(MARKER)


class LogdirPlace(NamedTuple):
    """Where the portal finds a TensorBoard log folder: below the owner's area (`area`) or below the
    TensorBoard task's work dir (`work`); `relative` '' is that folder itself."""

    where: str
    relative: str


AREA, WORK = "area", "work"
_FS_URI_VARIABLE = re.compile(r"\$(?:\{PAI_DEFAULT_FS_URI\}|PAI_DEFAULT_FS_URI\b)")
_WORK_DIR_VARIABLE = re.compile(r"\$(?:\{PAI_WORK_DIR\}|PAI_WORK_DIR\b)")


def locate_logdir(path: str, *, area: str, work_dirs: tuple[str, ...]) -> LogdirPlace | None:
    """A TensorBoard plugin's log folder as the task names it, located: `$PAI_DEFAULT_FS_URI/...` or
    a path below `area` (where tasks see the owner's area) is in the area; `$PAI_WORK_DIR/...`, a
    relative path (the task's commands run in its work dir) or a path below one of `work_dirs` (the
    names the work dir has in a task) is in the work dir. None anywhere else (another variable, a
    storage's mount, the container's /tmp: nowhere the portal's machine can read)."""
    text = _FS_URI_VARIABLE.sub(lambda _: area, path.strip())
    text = _WORK_DIR_VARIABLE.sub(lambda _: work_dirs[0], text)
    if not text or "$" in text or "\0" in text:
        return None
    pure = PurePosixPath(text)
    if ".." in pure.parts:
        return None
    if not pure.is_absolute():
        return LogdirPlace(WORK, _below(pure))
    for base, where in [*((folder, WORK) for folder in work_dirs), (area, AREA)]:
        folder = PurePosixPath(base)
        if pure == folder or folder in pure.parents:
            return LogdirPlace(where, _below(pure.relative_to(folder)))
    return None


def _below(relative: PurePosixPath) -> str:
    return "" if str(relative) == "." else str(relative)


def downsample(steps: list[int], values: list[float], most: int) -> tuple[list[int], list[float]]:
    """At most about `most` points of a series for a plot: in each of most/2 buckets of steps its
    lowest and highest value, in step order (a spike or a dip survives, as M4 keeps them)."""
    if len(steps) <= most:
        return steps, values
    buckets = max(1, most // 2)
    size = math.ceil(len(steps) / buckets)
    kept_steps: list[int] = []
    kept_values: list[float] = []
    for start in range(0, len(steps), size):
        chunk = range(start, min(start + size, len(steps)))
        low = min(chunk, key=values.__getitem__)
        high = max(chunk, key=values.__getitem__)
        for index in sorted({low, high}):
            kept_steps.append(steps[index])
            kept_values.append(values[index])
    return kept_steps, kept_values
