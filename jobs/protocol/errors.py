"""The one error the protocol raises: a list of (field path, message) pairs, each message a code
and its parameters (catalogue.Message, the codes in jobs.protocol.texts)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from catalogue import Message

FieldError = tuple[str, Message]


class JobConfigError(Exception):
    """The config is not acceptable. `errors` holds (field_path, Message) pairs, e.g.
    ("taskRoles[0].memoryMB", config.min {value: 100}: "must be >= 100"); document-level errors
    (syntax, size) use the path "" and carry `line` / `column` (1-based) when the parser knows them.
    str() is every error in English, `field: message`, as validatejob, the CLI and logs say them."""

    def __init__(self, errors: Iterable[FieldError], *, line: int | None = None, column: int | None = None) -> None:
        self.errors: list[FieldError] = list(errors)
        self.line = line
        self.column = column
        super().__init__("; ".join(format_error(field, message) for field, message in self.errors))

    def as_dicts(self) -> list[dict[str, Any]]:
        """[{field, message, code, params}]: the API's and validatejob --json's shape."""
        return [{"field": field, "message": message.text, **message.as_dict()} for field, message in self.errors]

    @property
    def english(self) -> list[tuple[str, str]]:
        """(field, the message in English) pairs."""
        return english(self.errors)

    @property
    def codes(self) -> list[tuple[str, str]]:
        """(field, the message's code) pairs."""
        return [(field, message.code) for field, message in self.errors]


def english(errors: Iterable[FieldError]) -> list[tuple[str, str]]:
    """(field, the message in English) pairs."""
    return [(field, message.text) for field, message in errors]


def format_error(field: str, message: Message | str) -> str:
    """`field.path: message` in English, or just the message for document-level errors."""
    text = message.text if isinstance(message, Message) else message
    return f"{field}: {text}" if field else text


def unique(errors: Iterable[FieldError]) -> list[FieldError]:
    """The errors without repeats (the same field and the same words), in their order."""
    seen: set[tuple[str, str, str]] = set()
    kept = []
    for field, message in errors:
        key = (field, message.code, message.text)
        if key not in seen:
            seen.add(key)
            kept.append((field, message))
    return kept


def field_path(parts: Iterable[str | int]) -> str:
    """("taskRoles", 0, "memoryMB") -> "taskRoles[0].memoryMB"."""
    out = ""
    for part in parts:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += f".{part}" if out else str(part)
    return out
