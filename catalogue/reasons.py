"""A reason (why a job waits, why a node is down) is a list of Messages, its parts: in English
they are joined by "; ". Stored as a JSON list of their dicts beside the English, and read back."""

from __future__ import annotations

import json
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


class StoredParts:
    """stored_parts for many reasons at once, each message worked out once: a scheduler pass gives
    thousands of waiting jobs the same few message objects (every job behind a VC's first one is
    told the same), and turning one into its dict is most of a reason's cost. Keyed by the
    message object itself (kept, so its id is not reused); for one pass, then dropped."""

    def __init__(self) -> None:
        self._known: dict[int, tuple[Message, dict[str, Any], str]] = {}

    def _of(self, part: Message) -> tuple[Message, dict[str, Any], str]:
        known = self._known.get(id(part))
        if known is None or known[0] is not part:
            data = part.as_dict()
            known = self._known[id(part)] = (part, data, json.dumps(data, sort_keys=True))
        return known

    def parts(self, reason: Iterable[Message]) -> list[dict[str, Any]]:
        """stored_parts(reason)."""
        return [self._of(part)[1] for part in reason]

    def key(self, reason: Iterable[Message]) -> tuple[str, ...]:
        """What two reasons that say the same share (their parts as JSON)."""
        return tuple(self._of(part)[2] for part in reason)
