"""Reading a catalogue Message's parameters in tests, nested ones too."""

from __future__ import annotations

from typing import Any

from catalogue import Message


def param(message: Message, *path: str | int) -> Any:
    """A parameter down a path of names and list indexes: `param(reason, "nodes", 0, "why")`."""
    value: Any = message
    for step in path:
        value = value[step] if isinstance(step, int) else value.params[step]
    return value
