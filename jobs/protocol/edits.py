"""A submitted config with one value changed and a new name, in its own protocol (v1 or v2, as
detect_version tells) and its own format (JSON stays JSON): the job page's one-click fixes
(web.fixes) resubmit these."""

from __future__ import annotations

import json
from typing import Any

import yaml

from jobs.protocol.fields import name_field
from jobs.protocol.loader import detect_version
from jobs.protocol.parsing import parse


def with_memory(config_text: str, role: str, memory_mb: int, name: str) -> str:
    """`role`'s memory (v1: memoryMB, v2: resourcePerInstance.memoryMB)."""
    return _edited(config_text, name, role, lambda role_doc, v1: _set_memory(role_doc, v1, memory_mb))


def with_shm(config_text: str, role: str, shm_mb: int, name: str) -> str:
    """`role`'s /dev/shm (v1: shmMB, v2: extraContainerOptions.shmMB)."""
    return _edited(config_text, name, role, lambda role_doc, v1: _set_shm(role_doc, v1, shm_mb))


def with_parameter(config_text: str, parameter: str, value: int, name: str) -> str:
    """One of a v2 config's parameters."""
    doc, is_json = parse(config_text)
    doc[name_field(2)] = name
    doc["parameters"][parameter] = value
    return _dumped(doc, is_json)


def _set_memory(role_doc: dict[str, Any], v1: bool, memory_mb: int) -> None:
    (role_doc if v1 else role_doc.setdefault("resourcePerInstance", {}))["memoryMB"] = memory_mb


def _set_shm(role_doc: dict[str, Any], v1: bool, shm_mb: int) -> None:
    (role_doc if v1 else role_doc.setdefault("extraContainerOptions", {}))["shmMB"] = shm_mb


def _edited(config_text: str, name: str, role: str, change: Any) -> str:
    doc, is_json = parse(config_text)
    version = detect_version(doc, is_json)
    doc[name_field(version)] = name
    if version == 1:  # a list of roles, each naming itself
        for role_doc in doc["taskRoles"]:
            if role_doc.get("name") == role:
                change(role_doc, True)
    else:
        change(doc["taskRoles"][role], False)
    return _dumped(doc, is_json)


def _dumped(doc: dict[str, Any], is_json: bool) -> str:
    return json.dumps(doc, indent=2) if is_json else yaml.safe_dump(doc, sort_keys=False, allow_unicode=True)
