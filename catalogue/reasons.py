"""A reason (why a job waits, why a node is down) is a list of Messages, its parts: in English
they are joined by "; ". Stored as a JSON list of their dicts beside the English, and read back."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from catalogue import Message, joined

Reason = list[Message]


def stored_parts(reason: Iterable[Message]) -> list[dict[str, Any]]:
    """The parts as stored (and compared with what is stored): each {"code", "params", "message"}."""
    return [part.as_dict() for part in reason]


def stored_reason(data: Any) -> Reason:
    """Stored parts as Messages again; [] for none (a row older than its codes: its English only)."""
    if not isinstance(data, list):
        return []
    return [Message.from_dict(part) for part in data if isinstance(part, dict) and part.get("code")]


def reason_columns(field: str, reason: Sequence[Message]) -> dict[str, Any]:
    """`field` (English, the parts joined) and `<field>_messages` (the parts), for an update."""
    return {field: joined(reason), f"{field}_messages": stored_parts(reason)}
