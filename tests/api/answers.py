"""What the tests read of an error answer: OpenPAI's part, and the whole answer's keys."""

from __future__ import annotations

from typing import Any

# OpenPAI's `code` and `message`, and the catalogue's `errors` and `field` (web.api.errors).
ERROR_KEYS = {"code", "message", "errors", "field"}


def openpai(answer: dict[str, Any]) -> dict[str, Any]:
    """OpenPAI's part of an error answer, `{code, message}`, as its clients read it."""
    return {"code": answer["code"], "message": answer["message"]}
