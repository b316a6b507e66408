"""export(spec) -> v2 YAML; mask_config_text(text) for showing a submitted config; export_config(text)
and editable_document(text) for exporting and cloning it with its `<% $parameters.x %>` kept."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

import yaml

from jobs.protocol.errors import JobConfigError
from jobs.protocol.loader import load
from jobs.protocol.parsing import parse
from jobs.protocol.templating import REFERENCE
from jobs.protocol.v2 import MASK

# libyaml's emitter where PyYAML was built with it: the same text, ~4x faster than the pure-Python one.
SafeDumper: Any = yaml.CSafeDumper if yaml.__with_libyaml__ else yaml.SafeDumper


class _Dumper(SafeDumper):
    """Block style, multi-line strings as `|` blocks (PyYAML falls back to quotes when it must)."""


def _represent_str(dumper: yaml.SafeDumper, value: str) -> yaml.ScalarNode:
    style = "|" if "\n" in value else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)


_Dumper.add_representer(str, _represent_str)


def export(spec: Mapping[str, Any]) -> str:
    """The normalized spec as v2 YAML; load(export(spec)).spec == spec. Secrets stay masked."""
    return yaml.dump(spec, Dumper=_Dumper, sort_keys=False, allow_unicode=True, default_flow_style=False, width=120)


def export_masked(doc: Mapping[str, Any]) -> str:
    """A document as v2 YAML with its secret values (and inline registry password) as ******: the
    stored text of a config the portal made rather than one typed (a sweep's runs)."""
    return export(_masked_document(dict(doc)))


def editable_document(text: str) -> dict[str, Any]:
    """A submitted config as the user wrote it, for a clone: v2 with its references (editing a
    parameter still changes the commands) and secrets masked; v1 converted to v2 (it has no
    references)."""
    cfg = load(text)
    if cfg.protocol_version == 1:
        return dict(cfg.spec)
    return parse(mask_config_text(text))[0]


def export_config(text: str) -> str:
    """A submitted config as v2 YAML that keeps its references, secrets masked: the text itself
    when it is v2 YAML (comments stay), else the document written as YAML. Raises JobConfigError."""
    cfg = load(text)
    if cfg.protocol_version == 1:
        return export(cfg.spec)
    masked = mask_config_text(text)
    _doc, is_json = parse(masked)
    return export(editable_document(text)) if is_json else masked


_TOP_SECRETS = re.compile(r"^secrets[ \t]*:[ \t]*(?:#.*)?$")
_ENTRY = re.compile(r"^([ \t]+)([^\s#][^:]*?|'[^']*'|\"[^\"]*\")[ \t]*:(?:[ \t]+(.*))?$")
_PASSWORD = re.compile(r"^([ \t]*(?:-[ \t]+)?password[ \t]*:[ \t]+)(.+?)[ \t]*$")


def mask_config_text(text: str) -> str:
    """The submitted text with every secret value (and inline registry password) shown as ******.
    Lines and comments are kept where the secrets block is plain YAML; otherwise the config is
    re-written from its masked data."""
    try:
        doc, is_json = parse(text)
    except JobConfigError:
        return text
    return masked_text(text, doc, is_json)


def masked_text(text: str, doc: dict[str, Any], is_json: bool) -> str:
    """mask_config_text of a text parsed already (`doc`, `is_json`: what parse() made of it)."""
    expected = _masked_document(doc)
    if expected == doc:
        return text
    masked = _mask_lines(text)
    try:
        if parse(masked)[0] == expected:
            return masked
    except JobConfigError:
        pass
    if is_json:
        return json.dumps(expected, indent=2, ensure_ascii=False) + "\n"
    return yaml.dump(expected, Dumper=_Dumper, sort_keys=False, allow_unicode=True, width=120)


def _masked_document(doc: dict[str, Any]) -> dict[str, Any]:
    masked = dict(doc)
    if isinstance(doc.get("secrets"), dict) and doc["secrets"]:
        masked["secrets"] = dict.fromkeys(doc["secrets"], MASK)
    prerequisites = doc.get("prerequisites")
    if isinstance(prerequisites, list):
        masked["prerequisites"] = [_masked_auth(p) for p in prerequisites]
    return masked


def _masked_auth(prerequisite: Any) -> Any:
    auth = prerequisite.get("auth") if isinstance(prerequisite, dict) else None
    if not isinstance(auth, dict):
        return prerequisite
    password = auth.get("password")
    if not isinstance(password, str) or not password or _is_secret_reference(password):
        return prerequisite
    return {**prerequisite, "auth": {**auth, "password": MASK}}


def _is_secret_reference(value: str) -> bool:
    match = REFERENCE.fullmatch(value.strip())
    return match is not None and match.group(1) == "secrets"


def _mask_lines(text: str) -> str:
    newline = "\r\n" if "\r\n" in text else "\n"
    lines = text.split(newline)
    out: list[str] = []
    in_secrets = False
    entry_indent: str | None = None
    skipping_below: int | None = None
    for line in lines:
        stripped = line.strip()
        indent = len(line) - len(line.lstrip())
        if skipping_below is not None:
            if not stripped:
                out.append(line)
                continue
            if indent > skipping_below:
                continue  # a masked value's continuation lines go
            skipping_below = None
        if _TOP_SECRETS.match(line):
            in_secrets, entry_indent = True, None
            out.append(line)
            continue
        if in_secrets:
            if stripped and indent == 0 and not stripped.startswith("#"):
                in_secrets = False
            else:
                entry = _ENTRY.match(line)
                if entry and (entry_indent is None or entry.group(1) == entry_indent):
                    entry_indent = entry.group(1)
                    out.append(f"{entry.group(1)}{entry.group(2)}: '{MASK}'")
                    skipping_below = len(entry.group(1))
                    continue
                out.append(line)
                continue
        password = _PASSWORD.match(line)
        if password and not _is_secret_reference(password.group(2).strip("'\"")):
            out.append(f"{password.group(1)}'{MASK}'")
            continue
        out.append(line)
    return newline.join(out)
