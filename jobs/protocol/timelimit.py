"""A job's time limit (pure): what the config asks for, what its virtual cluster allows, and how
Slurm is told.

OpenPAI's protocol has no run-time limit, so the portal reads its own documented extra,
`extras.maxRunTimeMinutes` (a positive number of minutes; fractions allowed, kept to the second,
so `0.05` is 3 s). A job that names none gets its VC's default; a VC's maximum refuses a longer
ask at submit, naming the field, and caps a job that names none and whose VC has no default.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from catalogue import Message, text_of
from jobs.protocol.errors import FieldError

FIELD = "extras.maxRunTimeMinutes"
KEY = "maxRunTimeMinutes"
# A limit past this (ten years) is surely a slip; it would also overflow some databases' intervals.
MAX_MINUTES = 10 * 366 * 24 * 60


def field_errors(extras: dict[str, Any]) -> list[FieldError]:
    """The extra's type and range, checked when the config is loaded."""
    if KEY not in extras:
        return []
    value = extras[KEY]
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        return [(FIELD, Message.of("config.time_limit_type", value=repr(value)))]
    if value <= 0:
        return [(FIELD, Message.of("config.time_limit_positive", value=repr(value)))]
    if value > MAX_MINUTES:
        return [(FIELD, Message.of("config.time_limit_max", most=MAX_MINUTES, value=repr(value)))]
    return []


def asked_seconds(extras: dict[str, Any]) -> int | None:
    """The limit the config asks for, in whole seconds (rounded up, at least 1), or None."""
    value = extras.get(KEY)
    if value is None or field_errors(extras):
        return None
    return max(1, math.ceil(value * 60))


@dataclass(frozen=True)
class Resolved:
    seconds: int | None  # the job's limit; None: it may run as long as it likes
    error: Message | None = None  # why the ask is refused (for FIELD)


def resolve(asked: int | None, vc_default_minutes: int | None, vc_max_minutes: int | None) -> Resolved:
    """The job's limit from its own ask and its VC's default and maximum (whole minutes)."""
    maximum = vc_max_minutes * 60 if vc_max_minutes else None
    if asked is not None:
        if maximum is not None and asked > maximum:
            return Resolved(None, Message.of("config.time_limit_vc", asked=duration(asked), most=duration(maximum)))
        return Resolved(asked)
    if vc_default_minutes:
        default = vc_default_minutes * 60
        return Resolved(min(default, maximum) if maximum is not None else default)
    return Resolved(maximum)


def duration(seconds: int) -> list[Message]:
    """`90 min`, `2 h 5 min`, `45 s`: a limit as people read it, each part a message (its unit)."""
    if seconds < 60:
        return [Message.of("time.seconds", count=seconds)]
    minutes, rest = divmod(seconds, 60)
    hours, minutes = divmod(minutes, 60)
    parts = [(hours, text_of("time.hours")), (minutes, text_of("time.minutes")), (rest, text_of("time.seconds"))]
    return [unit(count=count) for count, unit in parts if count]


def duration_text(seconds: int) -> str:
    """`90 min`, `2 h 5 min`, `45 s` in English."""
    return " ".join(part.text for part in duration(seconds))


def slurm_time(seconds: int) -> str:
    """sbatch's `--time` (days-hours:minutes:seconds); Slurm rounds it up to the next minute."""
    days, rest = divmod(seconds, 86400)
    hours, rest = divmod(rest, 3600)
    minutes, secs = divmod(rest, 60)
    return f"{days}-{hours:02d}:{minutes:02d}:{secs:02d}"
