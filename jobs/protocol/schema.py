"""The JSON Schemas (data files in schemas/) and their errors as (field path, message) pairs.

Validators are compiled once per process; messages are short and say what is expected.
"""

from __future__ import annotations

import difflib
import json
import re
from functools import cache
from pathlib import Path
from typing import Any, cast

import jsonschema_rs
from jsonschema import Draft202012Validator
from jsonschema.exceptions import ValidationError

from catalogue import Message
from jobs.protocol import texts
from jobs.protocol.errors import FieldError, field_path, unique

SCHEMA_DIR = Path(__file__).with_name("schemas")


@cache
def schema(version: int) -> dict[str, Any]:
    """The JSON Schema of protocol v1 or v2, as data (also for the API docs and the form).
    One shared object per process: copy it before changing anything."""
    return json.loads((SCHEMA_DIR / f"v{version}.json").read_text(encoding="utf-8"))


@cache
def validator(version: int) -> Draft202012Validator:
    return Draft202012Validator(schema(version))


@cache
def fast_validator(version: int) -> Any:
    """A compiled validator: it answers "valid?" in microseconds; jsonschema explains what is wrong."""
    return jsonschema_rs.validator_for(schema(version))


def schema_errors(version: int, doc: Any) -> list[FieldError]:
    """Every schema violation, without duplicates ([] for a valid document)."""
    if fast_validator(version).is_valid(doc):
        return []
    return unique(item for error in validator(version).iter_errors(doc) for item in describe(error))


def describe(error: ValidationError) -> list[FieldError]:
    """A jsonschema error as (field path, message) pairs in the portal's words."""
    path = list(error.absolute_path)
    kind, value, instance = error.validator, cast(Any, error.validator_value), cast(Any, error.instance)
    where: dict[str, Any] = error.schema if isinstance(error.schema, dict) else {}
    if kind == "required":
        return [(field_path([*path, key]), Message.of("config.required")) for key in value if key not in instance]
    if kind == "additionalProperties" and value is False:
        return [(field_path([*path, key]), _unknown_key(key, where)) for key in _extra_keys(instance, where)]
    if "propertyNames" in error.schema_path:
        # A bad mapping key: jsonschema reports it at the mapping, with the key as the instance.
        message = _allowed(value, name=True) if kind == "pattern" else _message(kind, value, error)
        return [(field_path([*path, str(instance)]), message)]
    return [(field_path(path), _message(kind, value, error))]


def _message(kind: Any, value: Any, error: ValidationError) -> Message:
    if kind == "type":
        return texts.must_be([value] if isinstance(value, str) else list(value))
    if kind == "minimum":
        return Message.of("config.min", value=value)
    if kind == "maximum":
        return Message.of("config.max", value=value)
    if kind in ("enum", "const"):
        options = value if kind == "enum" else [value]
        return Message.of("config.one_of", options=", ".join(json.dumps(option) for option in options))
    if kind == "pattern":
        return Message.of("config.blank") if value == r"\S" else _allowed(value)
    if kind == "minLength":
        return Message.of("config.empty_value") if value == 1 else Message.of("config.min_length", value=value)
    if kind == "maxLength":
        return Message.of("config.max_length", value=value)
    if kind in ("minItems", "minProperties"):
        return Message.of("config.empty_value") if value == 1 else Message.of("config.min_items", value=value)
    return Message.of("config.schema", detail=error.message)


def _allowed(pattern: str, *, name: bool = False) -> Message:
    words = texts.ALLOWED_WORDS.get(pattern)
    if words is None:
        return Message.of("config.name_must_match" if name else "config.must_match", pattern=pattern)
    return Message.of("config.name_may_contain" if name else "config.may_contain", words=words())


def _extra_keys(instance: dict[str, Any], schema: dict[str, Any]) -> list[str]:
    known = schema.get("properties", {})
    patterns = [re.compile(p) for p in schema.get("patternProperties", {})]
    return [key for key in instance if key not in known and not any(p.search(key) for p in patterns)]


def _unknown_key(key: str, schema: dict[str, Any]) -> Message:
    close = difflib.get_close_matches(key, list(schema.get("properties", {})), n=1, cutoff=0.6)
    return (
        Message.of("config.unknown_key_close", key=key, close=close[0])
        if close
        else Message.of("config.unknown_key", key=key)
    )
