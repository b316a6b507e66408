"""The shape of every API error answer: OpenPAI's `{code, message}` (the English) and the same as
catalogue messages, `errors: [{field, message, code, params}]`, with `field` naming the first's.
Standard library and the catalogue only: the ASGI server's own refusals (pai_portal.serving) answer
it before Django runs."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from catalogue import Message


def entry(message: Message, field: str = "") -> dict[str, Any]:
    """One of an answer's `errors`: {field, message, code, params}."""
    return {"field": field, **message.as_dict()}


@dataclass(frozen=True)
class Answer:
    """An error answer: its HTTP status, OpenPAI's code, the English message and its `errors`."""

    status: int
    code: str
    message: str
    errors: list[dict[str, Any]]

    def body(self) -> dict[str, Any]:
        return {
            "code": self.code,
            "message": self.message,
            "errors": self.errors,
            "field": self.errors[0]["field"] if self.errors else "",
        }


def answer(status_code: int, code: str, message: Message, field: str = "") -> Answer:
    """The answer that says one message (its English is `message`)."""
    return Answer(status_code, code, message.text, [entry(message, field)])
