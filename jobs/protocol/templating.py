"""`<% $namespace.path %>` references: parameters, secrets, and the task role's script/data/output.

$parameters, $script, $data and $output are expanded when the config is loaded; $secrets stay
references (in the canonical form `<% $secrets.name %>`) until task_script renders them at launch.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from catalogue import Message
from jobs.protocol.errors import FieldError
from jobs.protocol.limits import MAX_SPEC_BYTES, may_expand

REFERENCE = re.compile(r"<%\s*\$([A-Za-z_][A-Za-z0-9_]*)((?:\.[^\s.\[\]%]+|\[\d+\])*)\s*%>")
_SEGMENT = re.compile(r"\.([^\s.\[\]%]+)|\[(\d+)\]")
ROLE_SCOPED = ("script", "data", "output")
TOO_MUCH_EXPANSION = Message.of("config.ref.too_much", mb=MAX_SPEC_BYTES // (1024 * 1024))


@dataclass
class Scope:
    """What references may name at one place of the config."""

    parameters: dict[str, Any]
    secrets: frozenset[str]
    prerequisites: Mapping[str, Mapping[str, Any] | None] = field(default_factory=dict)  # script/data/output
    in_task_role: bool = False
    only_secrets: bool = False  # parameter values: expanding them again must change nothing
    # Hooks (jobs.protocol.hooks) keep $script/$data/$output until each task role expands them.
    defer_role_references: bool = False


def to_text(value: Any) -> str:
    """How a value reads inside a command (JSON spelling for booleans, null and structures)."""
    if isinstance(value, str):
        return value
    if isinstance(value, bool) or value is None or isinstance(value, dict | list):
        return json.dumps(value, separators=(",", ":"))
    return str(value)


def secret_reference(name: str) -> str:
    return f"<% $secrets.{name} %>"


def expand(text: str, scope: Scope, path: str, errors: list[FieldError]) -> str:
    """The text with references replaced; each bad reference adds a (path, message) error."""
    if "<%" not in text:
        return text

    def replace(match: re.Match[str]) -> str:
        namespace, raw_path = match.group(1), match.group(2)
        segments: list[str | int] = [name if name else int(index) for name, index in _SEGMENT.findall(raw_path)]
        if scope.defer_role_references and namespace in ROLE_SCOPED:
            return match.group()
        try:
            value = _resolve(namespace, segments, scope)
        except Unresolved as exc:
            errors.append((path, exc.message))
            return match.group()
        if not may_expand(len(value)):
            if not errors or errors[-1][1].code != TOO_MUCH_EXPANSION.code:  # once, not once per reference
                errors.append((path, TOO_MUCH_EXPANSION))
            return match.group()
        return value

    return REFERENCE.sub(replace, text)


def expand_tree(value: Any, scope: Scope, path: str, errors: list[FieldError]) -> Any:
    """A copy of a JSON-like value with every string expanded."""
    if isinstance(value, str):
        return expand(value, scope, path, errors)
    if isinstance(value, dict):
        return {key: expand_tree(item, scope, f"{path}.{key}", errors) for key, item in value.items()}
    if isinstance(value, list):
        return [expand_tree(item, scope, f"{path}[{index}]", errors) for index, item in enumerate(value)]
    return value


class Unresolved(LookupError):
    """A reference that names nothing it may name, and why."""

    def __init__(self, message: Message) -> None:
        super().__init__(message.text)
        self.message = message


def _resolve(namespace: str, segments: list[str | int], scope: Scope) -> str:
    if scope.only_secrets and namespace != "secrets":
        raise Unresolved(Message.of("config.ref.parameter_not_secret", namespace=namespace))
    if namespace == "secrets":
        if len(segments) != 1 or not isinstance(segments[0], str):
            raise Unresolved(Message.of("config.ref.secret_form", form="<% $secrets.name %>"))
        if segments[0] not in scope.secrets:
            raise Unresolved(Message.of("config.ref.undefined_secret", name=segments[0]))
        return secret_reference(segments[0])
    if namespace == "parameters":
        if not segments:
            raise Unresolved(Message.of("config.ref.parameter_form", form="<% $parameters.name %>"))
        return to_text(_walk(scope.parameters, segments, _undefined_parameter))
    if namespace in ROLE_SCOPED:
        if not scope.in_task_role:
            raise Unresolved(Message.of("config.ref.role_only", namespace=namespace))
        prerequisite = scope.prerequisites.get(namespace)
        if prerequisite is None:
            raise Unresolved(Message.of("config.ref.no_prerequisite", namespace=namespace))
        if not segments:
            raise Unresolved(Message.of("config.ref.field_form", namespace=namespace, form=f"<% ${namespace}.name %>"))
        if segments[0] == "uri" and isinstance(prerequisite.get("uri"), str) and len(segments) > 1:
            prerequisite = {**prerequisite, "uri": [prerequisite["uri"]]}  # a single URI indexes as a list
        owner = str(prerequisite["name"])
        return to_text(_walk(prerequisite, segments, lambda name, item: _undefined_field(namespace, name, owner, item)))
    raise Unresolved(Message.of("config.ref.unknown", namespace=namespace))


def _undefined_parameter(name: str, item: bool) -> Message:
    return Message.of("config.ref.undefined_parameter_item" if item else "config.ref.undefined_parameter", name=name)


def _undefined_field(namespace: str, name: str, prerequisite: str, item: bool) -> Message:
    text = "config.ref.undefined_field_item" if item else "config.ref.undefined_field"
    return Message.of(text, namespace=namespace, name=name, prerequisite=prerequisite)


def _walk(value: Any, segments: list[str | int], undefined: Callable[[str, bool], Message]) -> Any:
    """The value the segments name; Unresolved with `undefined(name so far, whether an item)`."""
    for depth, segment in enumerate(segments):
        if isinstance(segment, int):
            if not isinstance(value, list) or segment >= len(value):
                raise Unresolved(undefined(_dotted(segments[: depth + 1]), True))
        elif not isinstance(value, dict) or segment not in value:
            raise Unresolved(undefined(_dotted(segments[: depth + 1]), False))
        value = value[segment]
    return value


def _dotted(segments: list[str | int]) -> str:
    return "".join(f".{s}" if isinstance(s, str) else f"[{s}]" for s in segments).lstrip(".")
