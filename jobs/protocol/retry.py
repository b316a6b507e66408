"""The retry decision (pure): after a task or a job attempt ends, is it retried, and is that
retry charged to the user's retry count?

OpenPAI's exit spec decides by behaviour: transient failures are always retried and never
charged (capped here by `transient_cap` so that a flapping node cannot loop forever; past the cap
a transient failure is treated as unknown); permanent ones are never retried; unknown ones are
retried while the user's count allows.
"""

from __future__ import annotations

from enum import Enum

from jobs.protocol.exitspec import Behaviour


class Retry(Enum):
    NONE = "none"
    FREE = "free"  # transient: not charged to taskRetryCount / jobRetryCount
    CHARGED = "charged"


def task_retry(
    *, code: int, behaviour: Behaviour, retries: int, allowed: int, transient_used: int, transient_cap: int
) -> Retry:
    """A task's exit: retried on its own (taskRetryCount), before the completion policy sees it."""
    if code == 0:
        return Retry.NONE
    if behaviour == "transient" and transient_used < transient_cap:
        return Retry.FREE
    if behaviour != "permanent" and retries < allowed:
        return Retry.CHARGED
    return Retry.NONE


def job_retry(
    *, behaviour: Behaviour, retries_used: int, allowed: int, transient_used: int, transient_cap: int
) -> Retry:
    """A failed job attempt: the whole gang is placed again (jobRetryCount)."""
    if behaviour == "transient" and transient_used < transient_cap:
        return Retry.FREE
    if behaviour == "unknown" and retries_used < allowed:
        return Retry.CHARGED
    return Retry.NONE
