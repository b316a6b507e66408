"""The one error the protocol raises: a list of (field path, message) pairs."""

from __future__ import annotations

from collections.abc import Iterable

FieldError = tuple[str, str]


class JobConfigError(Exception):
    """The config is not acceptable. `errors` holds (field_path, message) pairs, e.g.
    ("taskRoles[0].memoryMB", "must be >= 100"); document-level errors (syntax, size) use the
    path "" and carry `line` / `column` (1-based) when the parser knows them."""

    def __init__(self, errors: Iterable[FieldError], *, line: int | None = None, column: int | None = None) -> None:
        self.errors: list[FieldError] = list(errors)
        self.line = line
        self.column = column
        super().__init__("; ".join(format_error(field, message) for field, message in self.errors))

    def as_dicts(self) -> list[dict[str, str]]:
        return [{"field": field, "message": message} for field, message in self.errors]


def format_error(field: str, message: str) -> str:
    """`field.path: message`, or just the message for document-level errors."""
    return f"{field}: {message}" if field else message


def field_path(parts: Iterable[str | int]) -> str:
    """("taskRoles", 0, "memoryMB") -> "taskRoles[0].memoryMB"."""
    out = ""
    for part in parts:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += f".{part}" if out else str(part)
    return out
