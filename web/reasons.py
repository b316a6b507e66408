"""Why a job waits and why a node is down, as the pages show them: each part of the reason rendered
by its code in the reader's language (catalogue.reasons stores them). A row older than its codes
shows its English as it was stored; nothing is parsed back from the English."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from catalogue import Message
from catalogue.reasons import stored_reason
from web.texts import translated

SEPARATOR = "; "  # between a reason's parts (as in the English)


def reason_text(parts: Iterable[Message] | Any, english: str = "") -> str:
    """A reason (its Messages, or their stored dicts) in the page's language; `english` where it
    has none (a row written before its codes)."""
    messages = list(parts) if _all_messages(parts) else stored_reason(parts)
    if not messages:
        return english
    return SEPARATOR.join(translated(part) for part in messages)


def _all_messages(parts: Any) -> bool:
    return isinstance(parts, list | tuple) and bool(parts) and all(isinstance(part, Message) for part in parts)


def job_reason(job: Any) -> str:
    """Why the job waits, in the page's language ("" when it does not say)."""
    return reason_text(job.pending_reason_messages, job.pending_reason)


def node_reason(node: Any) -> str:
    """Why the node is down, in the page's language."""
    return reason_text(node.down_reason_messages, node.down_reason)
