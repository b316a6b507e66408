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

from jobs.protocol.errors import FieldError, field_path

SCHEMA_DIR = Path(__file__).with_name("schemas")

# What a name pattern of the schemas allows, in words: a raw regex means little to most users.
_PATTERN_WORDS = {
    r"^[A-Za-z0-9\-._~]+$": "letters, digits and - . _ ~",
    r"^[A-Za-z0-9\-._]+$": "letters, digits and - . _",
    r"^[A-Za-z0-9._~]+$": "letters, digits and . _ ~",
    r"^[a-zA-Z0-9_-]+$": "letters, digits, _ and -",
    r"^[a-zA-Z_][a-zA-Z0-9_]*$": "letters, digits and _, not starting with a digit",
}

_TYPE_NAMES = {
    "integer": "an integer",
    "number": "a number",
    "string": "a string",
    "boolean": "a boolean (true or false)",
    "object": "a mapping",
    "array": "a list",
    "null": "null",
}


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
    found: dict[FieldError, None] = {}
    for error in validator(version).iter_errors(doc):
        for item in _describe(error):
            found.setdefault(item, None)
    return list(found)


def _describe(error: ValidationError) -> list[FieldError]:
    path = list(error.absolute_path)
    kind, value, instance = error.validator, cast(Any, error.validator_value), cast(Any, error.instance)
    where: dict[str, Any] = error.schema if isinstance(error.schema, dict) else {}
    if kind == "required":
        return [(field_path([*path, key]), "is required") for key in value if key not in instance]
    if kind == "additionalProperties" and value is False:
        return [(field_path([*path, key]), _unknown_key(key, where)) for key in _extra_keys(instance, where)]
    if "propertyNames" in error.schema_path:
        # A bad mapping key: jsonschema reports it at the mapping, with the key as the instance.
        message = f"name {_allowed(value)}" if kind == "pattern" else _message(kind, value, instance, error)
        return [(field_path([*path, str(instance)]), message)]
    return [(field_path(path), _message(kind, value, instance, error))]


def _message(kind: Any, value: Any, instance: Any, error: ValidationError) -> str:
    if kind == "type":
        kinds = [value] if isinstance(value, str) else list(value)
        return "must be " + " or ".join(_TYPE_NAMES.get(k, k) for k in kinds)
    if kind == "minimum":
        return f"must be >= {value}"
    if kind == "maximum":
        return f"must be <= {value}"
    if kind in ("enum", "const"):
        options = value if kind == "enum" else [value]
        return "must be one of: " + ", ".join(json.dumps(option) for option in options)
    if kind == "pattern":
        return "must not be blank" if value == r"\S" else _allowed(value)
    if kind == "minLength":
        return "must not be empty" if value == 1 else f"must be at least {value} characters"
    if kind == "maxLength":
        return f"must be at most {value} characters"
    if kind in ("minItems", "minProperties"):
        return "must not be empty" if value == 1 else f"must have at least {value} entries"
    return error.message


def _allowed(pattern: str) -> str:
    words = _PATTERN_WORDS.get(pattern)
    return f"may contain only {words}" if words else f"must match {pattern}"


def _extra_keys(instance: dict[str, Any], schema: dict[str, Any]) -> list[str]:
    known = schema.get("properties", {})
    patterns = [re.compile(p) for p in schema.get("patternProperties", {})]
    return [key for key in instance if key not in known and not any(p.search(key) for p in patterns)]


def _unknown_key(key: str, schema: dict[str, Any]) -> str:
    close = difflib.get_close_matches(key, list(schema.get("properties", {})), n=1, cutoff=0.6)
    return f"unknown key {key!r}" + (f" (did you mean {close[0]!r}?)" if close else "")
