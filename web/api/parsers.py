"""Request body parsers that enforce the body limit (DRF reads the raw stream, bypassing Django's
DATA_UPLOAD_MAX_MEMORY_SIZE check) and accept a job config in any content type but a multipart
form (an upload: 415 saying what to send)."""

from __future__ import annotations

import json
from typing import IO, Any

from django.conf import settings
from django.http import QueryDict
from rest_framework.parsers import BaseParser

from catalogue import Message
from web.api.errors import ApiError


def body_limit() -> int:
    return int(settings.DATA_UPLOAD_MAX_MEMORY_SIZE or 2 * 1024 * 1024)


def read_limited(stream: IO[bytes] | None) -> bytes:
    """The whole body, or a 413 when it is larger than the limit."""
    if stream is None:
        return b""
    limit = body_limit()
    data = stream.read(limit + 1)
    if len(data) > limit:
        raise ApiError(413, "InvalidParametersError", Message.of("api.body.too_large", limit=limit))
    return data


def decode_text(data: bytes, media_type: str | None) -> str:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as error:
        where = byte_position(data, error.start)
        raise ApiError(400, "InvalidParametersError", Message.of("api.body.not_utf8", where=where)) from error


def byte_position(data: bytes, offset: int) -> Message:
    """`line L, column C (byte B)` of a 0-based byte offset, so a client can find the bad byte."""
    line, line_start = data.count(b"\n", 0, offset) + 1, data.rfind(b"\n", 0, offset) + 1
    return Message.of("api.body.position", line=line, column=offset - line_start + 1, byte=offset + 1)


class ConfigTextParser(BaseParser):
    """The submit routes' body: YAML or JSON text, whatever the Content-Type says (curl's default
    application/x-www-form-urlencoded included), handed to jobs.protocol as a string."""

    media_type = "*/*"

    def parse(  # type: ignore[override]  # the config text itself, not a mapping
        self, stream: IO[bytes] | None, media_type: str | None = None, parser_context: Any = None
    ) -> str:
        if (media_type or "").lower().startswith("multipart/"):
            raise ApiError(415, "InvalidParametersError", Message.of("api.body.config_not_a_form"))
        return decode_text(read_limited(stream), media_type)


class LimitedJSONParser(BaseParser):
    media_type = "application/json"

    def parse(self, stream: IO[bytes] | None, media_type: str | None = None, parser_context: Any = None) -> Any:
        text = decode_text(read_limited(stream), media_type)
        if not text.strip():
            return {}
        try:
            return json.loads(text)
        except (ValueError, RecursionError) as error:
            raise ApiError(400, "InvalidParametersError", Message.of("api.body.not_json", said=str(error))) from error


class LimitedFormParser(BaseParser):
    media_type = "application/x-www-form-urlencoded"

    def parse(self, stream: IO[bytes] | None, media_type: str | None = None, parser_context: Any = None) -> Any:
        text = decode_text(read_limited(stream), media_type)
        try:
            return QueryDict(text)
        except Exception as error:  # TooManyFieldsSent and friends
            raise ApiError(400, "InvalidParametersError", Message.of("api.body.not_a_form", said=str(error))) from error
