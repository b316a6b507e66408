"""Why a job waits and why a node is down, as the pages show them: each part of the reason rendered
by its code in the reader's language (catalogue.reasons stores them). A row older than its codes
shows its English as it was stored; nothing is parsed back from the English."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from catalogue import Message, text_of
from web.texts import translated

SEPARATOR = "; "  # between a reason's parts (as in the English)


def reason_text(parts: Iterable[Message] | Any, english: str = "") -> str:
    """A reason (its Messages, or their stored dicts) in the page's language; `english` where it
    has none (a row written before its codes)."""
    if _all_messages(parts):
        return SEPARATOR.join(translated(part) for part in parts)
    stored = [part for part in parts if isinstance(part, dict) and part.get("code")] if isinstance(parts, list) else []
    return SEPARATOR.join(_stored_part(part) for part in stored) if stored else english


def _all_messages(parts: Any) -> bool:
    return isinstance(parts, list | tuple) and bool(parts) and all(isinstance(part, Message) for part in parts)


def _stored_part(stored: dict[str, Any]) -> str:
    """A stored part by its code; one whose code is gone since (renamed, removed) as it was stored."""
    message = Message.from_dict(stored)
    try:
        text_of(message.code)
    except KeyError:
        return str(stored.get("message") or message.code)
    return translated(message)


def job_reason(job: Any) -> str:
    """Why the job waits, in the page's language ("" when it does not say)."""
    return reason_text(job.pending_reason_messages, job.pending_reason)
