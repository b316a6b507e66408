"""Where a config names what the portal checks at submit, as its user wrote it: v1's path or v2's.
The one place outside the converters that knows the two protocols' shapes differ."""

from __future__ import annotations

from typing import Any

from jobs.protocol.priority import CLASS_FIELD, TOP_LEVEL_FIELD
from jobs.protocol.spec import NormalizedSpec


def name_field(version: int) -> str:
    return "jobName" if version == 1 else "name"


def vc_field(version: int) -> str:
    return "virtualCluster" if version == 1 else "defaults.virtualCluster"


def gpu_type_field(spec: NormalizedSpec, version: int) -> str:
    """v1's `gpuType`; v2's role that names a hived SKU, else `extras.gpuType`."""
    if version == 1:
        return "gpuType"
    skus = ((spec["extras"].get("hivedScheduler") or {}).get("taskRoles")) or {}
    role = next((role for role, hints in skus.items() if (hints or {}).get("skuType")), None)
    return f"extras.hivedScheduler.taskRoles.{role}.skuType" if role else "extras.gpuType"


def class_field(document: dict[str, Any], version: int) -> str:
    """v2's top-level `jobPriorityClass` when the user wrote it there, else OpenPAI's extras."""
    return TOP_LEVEL_FIELD if version == 2 and TOP_LEVEL_FIELD in document else CLASS_FIELD


def config_media_type(version: int) -> str:
    """What a submitted config's text is: v1's JSON, v2's YAML."""
    return "text/yaml" if version == 2 else "application/json"


# A resource's key in a normalized role's resourcePerInstance -> v1's name of it.
V1_RESOURCES = {"gpu": "gpuNumber", "cpu": "cpuNumber", "memoryMB": "memoryMB", "ports": "portList"}


def resource_field(spec: NormalizedSpec, version: int, role: str, key: str) -> str:
    """A role's resource (`key` as resourcePerInstance names it) as the user wrote it: v1's
    `taskRoles[<position>].cpuNumber`, v2's `taskRoles.<role>.resourcePerInstance.cpu`."""
    if version == 1:
        return f"taskRoles[{list(spec['taskRoles']).index(role)}].{V1_RESOURCES[key]}"
    return f"taskRoles.{role}.resourcePerInstance.{key}"
