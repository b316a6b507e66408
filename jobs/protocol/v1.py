"""Protocol v1 (OpenPAI's JSON job config, seeds 000/001/002/004): checks and conversion to the
normalized v2 spec. What v2 has no place for lands in extras.v1, verbatim."""

from __future__ import annotations

from typing import Any, cast

from catalogue import Message
from jobs.protocol.errors import FieldError
from jobs.protocol.schema import schema
from jobs.protocol.spec import NormalizedSpec
from jobs.protocol.templating import REFERENCE

IMAGE_PREREQUISITE = "image"
DEFAULT_SHM_MB = 64
DEFAULT_VIRTUAL_CLUSTER = "default"
# Fields the schema does not describe are kept verbatim in extras.v1 (seed 004's storageGB, tmp).
KNOWN_FIELDS = frozenset(schema(1)["properties"])
KNOWN_ROLE_FIELDS = frozenset(schema(1)["properties"]["taskRoles"]["items"]["properties"])


def with_aliases(doc: dict[str, Any]) -> dict[str, Any]:
    """Seed 002's generation calls taskNumber `number`: read it as taskNumber."""
    roles = doc.get("taskRoles")
    if not isinstance(roles, list) or not any(
        isinstance(r, dict) and "number" in r and "taskNumber" not in r for r in roles
    ):
        return doc
    aliased = [
        {**role, "taskNumber": role["number"]}
        if isinstance(role, dict) and "number" in role and "taskNumber" not in role
        else role
        for role in roles
    ]
    return {**doc, "taskRoles": aliased}


def cross_check(doc: dict[str, Any]) -> list[FieldError]:
    """Rules between fields of a schema-valid v1 document."""
    errors: list[FieldError] = []
    names: set[str] = set()
    for i, role in enumerate(doc["taskRoles"]):
        here = f"taskRoles[{i}]"
        if role["name"] in names:
            errors.append((f"{here}.name", Message.of("config.duplicate_role", name=role["name"])))
        names.add(role["name"])
        memory, tasks = role["memoryMB"], role["taskNumber"]
        if role.get("shmMB", DEFAULT_SHM_MB) > memory:
            errors.append((f"{here}.shmMB", Message.of("config.shm_over_memory_v1", value=memory)))
        for key in ("minFailedTaskCount", "minSucceededTaskCount"):
            if role.get(key) is not None and role[key] > tasks:
                errors.append((f"{here}.{key}", Message.of("config.at_most_task_number", value=tasks)))
        labels: set[str] = set()
        for j, port in enumerate(role.get("portList") or []):
            if port["label"] in labels:
                errors.append(
                    (f"{here}.portList[{j}].label", Message.of("config.duplicate_port_label", label=port["label"]))
                )
            labels.add(port["label"])
            if port["beginAt"] and port["beginAt"] + port["portNumber"] - 1 > 65535:
                errors.append((f"{here}.portList[{j}].portNumber", Message.of("config.ports_past_65535")))
    return errors + _template_errors(doc)


def _template_errors(doc: dict[str, Any]) -> list[FieldError]:
    """v1 has no templates, but its commands become v2 commands (export, clone), where
    `<% $parameters.x %>` would be read as one: refuse it rather than change what it means."""
    why = Message.of("config.v1_template_syntax", syntax="<% $... %>")
    fields = [
        ("image", doc.get("image")),
        *((f"taskRoles[{i}].command", r["command"]) for i, r in enumerate(doc["taskRoles"])),
    ]
    return [(field, why) for field, value in fields if isinstance(value, str) and REFERENCE.search(value)]


def convert(doc: dict[str, Any]) -> NormalizedSpec:
    """The normalized v2 spec of a checked v1 document."""
    name = doc["jobName"]
    roles: dict[str, Any] = {}
    port_begin: dict[str, dict[str, int]] = {}
    role_extra_fields: dict[str, dict[str, Any]] = {}
    for role in doc["taskRoles"]:
        ports = role.get("portList") or []
        roles[role["name"]] = {
            "instances": int(role["taskNumber"]),
            "completion": {
                "minFailedInstances": _count(role.get("minFailedTaskCount", 1)),
                "minSucceededInstances": _count(role.get("minSucceededTaskCount")),
            },
            "taskRetryCount": 0,
            "dockerImage": IMAGE_PREREQUISITE,
            "resourcePerInstance": {
                "cpu": int(role["cpuNumber"]),
                "memoryMB": int(role["memoryMB"]),
                "gpu": int(role["gpuNumber"]),
                "ports": {port["label"]: int(port["portNumber"]) for port in ports},
            },
            "extraContainerOptions": {"shmMB": int(role.get("shmMB", DEFAULT_SHM_MB))},
            "commands": [role["command"]],
        }
        if ports:
            port_begin[role["name"]] = {port["label"]: int(port["beginAt"]) for port in ports}
        unknown = {key: value for key, value in role.items() if key not in KNOWN_ROLE_FIELDS}
        if unknown:
            role_extra_fields[role["name"]] = unknown
    v1: dict[str, Any] = {
        "jobEnvs": doc.get("jobEnvs") or {},
        "dataDir": doc.get("dataDir") or "",
        "outputDir": doc.get("outputDir") or f"$PAI_DEFAULT_FS_URI/Output/{name}",
        "codeDir": doc.get("codeDir") or "",
        "authFile": doc.get("authFile") or "",
        "killAllOnCompletedTaskNumber": _count(doc.get("killAllOnCompletedTaskNumber")),
        "portBeginAt": port_begin,
    }
    if doc.get("extras"):
        v1["extras"] = doc["extras"]
    other_fields = {key: value for key, value in doc.items() if key not in KNOWN_FIELDS}
    if other_fields:
        v1["otherFields"] = other_fields
    if role_extra_fields:
        v1["taskRoleOtherFields"] = role_extra_fields
    extras: dict[str, Any] = {}
    if doc.get("gpuType"):
        extras["gpuType"] = doc["gpuType"]
    extras["v1"] = v1
    spec = {
        "protocolVersion": 2,
        "name": name,
        "type": "job",
        "jobRetryCount": int(doc.get("retryCount", 0)),
        "prerequisites": [{"name": IMAGE_PREREQUISITE, "type": "dockerimage", "uri": doc["image"]}],
        "parameters": {},
        "secrets": {},
        "defaults": {"virtualCluster": doc.get("virtualCluster") or DEFAULT_VIRTUAL_CLUSTER},
        "taskRoles": roles,
        "extras": extras,
    }
    return cast(NormalizedSpec, spec)


def _count(value: Any) -> int | None:
    return None if value is None else int(value)


def port_begin_at(spec: NormalizedSpec) -> dict[str, dict[str, int]]:
    """role -> port label -> a v1 `beginAt` (0 = any free port), as convert() kept them."""
    return ((spec.get("extras") or {}).get("v1") or {}).get("portBeginAt") or {}


def fixed_port_fields(spec: NormalizedSpec) -> list[str]:
    """The v1 fields (`taskRoles[0].portList[1].beginAt`) of the ports asked for at a fixed number."""
    begin_at = port_begin_at(spec)
    fields = []
    for role_number, (role, role_spec) in enumerate(spec["taskRoles"].items()):
        labels = list(role_spec["resourcePerInstance"].get("ports") or {})
        for label, port in (begin_at.get(role) or {}).items():
            if port and label in labels:
                fields.append(f"taskRoles[{role_number}].portList[{labels.index(label)}].beginAt")
    return fields
