"""OpenPAI's scheduling extras the portal honours, and those it refuses rather than ignore.

Honoured: `extras.hivedScheduler.jobPriorityClass` becomes the job's priority (OpenPAI's own numbers,
rest-server `middlewares/v2/hived.js`); a task role's `skuType` becomes the job's GPU type;
the `tensorboard` runtime plugin gets a `tensorboard` port on the first task role (and `jupyter` a
`jupyter` port, jobs/protocol/interactive.py); the
`teamwise_storage` plugin's storages are mounted (jobs/protocol/storages.py, jobs/storage/configs.py).
Refused at submit (`unsupported`), each naming its field: what no portal node can do.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from catalogue import Message
from jobs.protocol.errors import FieldError
from jobs.protocol.hooks import (
    CMD_PLUGINS,
    RUNTIME_PLUGINS,
    TENSORBOARD_PLUGIN,
    TENSORBOARD_PORT_LABEL,
    runtime_plugins,
    tensorboard_role,
)
from jobs.protocol.interactive import HTTP_PLUGIN, JUPYTER_PLUGIN, app_errors
from jobs.protocol.priority import CLASS_FIELD, DEFAULT_PRIORITY_CLASS, class_number, requested_class
from jobs.protocol.spec import NormalizedSpec
from jobs.protocol.storages import TEAMWISE_STORAGE_PLUGIN, storage_requests

SUPPORTED_PLUGINS = ("ssh", "cmd", TENSORBOARD_PLUGIN, JUPYTER_PLUGIN, HTTP_PLUGIN, TEAMWISE_STORAGE_PLUGIN)
HIVED_ROLE_KEYS = ("skuType", "skuNum", "skuNumber")


def job_priority(spec: NormalizedSpec) -> int:
    """The number of the class the config names (`test` when it names none)."""
    return class_number(requested_class(spec) or DEFAULT_PRIORITY_CLASS)


def move_top_level_class(doc: Mapping[str, Any], extras: dict[str, Any]) -> list[FieldError]:
    """v2's top-level `jobPriorityClass` is kept where OpenPAI's webportal writes it,
    `extras.hivedScheduler.jobPriorityClass` (one place to read); both, differing, are refused."""
    top = doc.get("jobPriorityClass")
    if not top:
        return []
    hived = dict(extras.get("hivedScheduler") or {})
    if hived.get("jobPriorityClass") and hived["jobPriorityClass"] != top:
        return [
            (
                "jobPriorityClass",
                Message.of("config.class_contradicts", field=CLASS_FIELD, value=hived["jobPriorityClass"]),
            )
        ]
    hived["jobPriorityClass"] = top
    extras["hivedScheduler"] = hived
    return []


def apply_hived_hints(extras: dict[str, Any], roles: dict[str, Any]) -> list[FieldError]:
    """`skuType` -> `extras.gpuType` (the portal places a job on one GPU type); `skuNum` must agree
    with the role's GPUs, which are what the portal allocates. Changes `extras` in place."""
    errors: list[FieldError] = []
    hived_roles = (extras.get("hivedScheduler") or {}).get("taskRoles") or {}
    sku_types: dict[str, str] = {}
    for role, hints in hived_roles.items():
        here = f"extras.hivedScheduler.taskRoles.{role}"
        if not isinstance(hints, dict) or role not in roles:
            continue
        if hints.get("skuType"):
            sku_types[role] = str(hints["skuType"])
        for key in ("skuNum", "skuNumber"):
            gpus = roles[role]["resourcePerInstance"]["gpu"]
            if hints.get(key) is not None and hints[key] != gpus:
                errors.append((f"{here}.{key}", Message.of("config.sku_gpus", sku=hints[key], gpus=gpus)))
    distinct = sorted(set(sku_types.values()))
    if len(distinct) > 1:
        first = next(iter(sku_types))
        field = f"extras.hivedScheduler.taskRoles.{first}.skuType"
        errors.append((field, Message.of("config.one_gpu_type", types=", ".join(distinct))))
    elif distinct:
        wanted = extras.get("gpuType")
        if wanted and wanted != distinct[0]:
            errors.append(("extras.gpuType", Message.of("config.gpu_type_contradicts", wanted=wanted, sku=distinct[0])))
        extras["gpuType"] = distinct[0]
    return errors


def reserve_tensorboard_port(spec: NormalizedSpec) -> None:
    """The TensorBoard plugin's port is allocated like any other: one `tensorboard` port on the
    task role whose first task runs it."""
    role = tensorboard_role(spec)
    if role is not None:
        ports = spec["taskRoles"][role]["resourcePerInstance"]["ports"]
        ports[TENSORBOARD_PORT_LABEL] = max(int(ports.get(TENSORBOARD_PORT_LABEL, 0)), 1)


def infiniband_roles(spec: NormalizedSpec) -> list[str]:
    """The task roles asking for InfiniBand devices (extraContainerOptions.infiniband: true); the
    portal checks at submit that a node of the job's VC has them (jobs.actions)."""
    return [
        role
        for role, role_spec in spec["taskRoles"].items()
        if (role_spec.get("extraContainerOptions") or {}).get("infiniband")
    ]


def unsupported(spec: NormalizedSpec) -> list[FieldError]:
    """What the config asks for that the portal cannot do: refused, never silently ignored."""
    extras = spec.get("extras") or {}
    errors = _plugin_errors(spec) + _hived_errors(extras.get("hivedScheduler") or {})
    for i, prerequisite in enumerate(spec.get("prerequisites") or []):
        plugin = prerequisite.get("plugin")
        if plugin and plugin not in CMD_PLUGINS:
            errors.append((f"prerequisites[{i}].plugin", Message.of("config.prerequisite_plugin", name=plugin)))
    errors.extend(storage_requests(spec).errors)
    return errors


def _plugin_errors(spec: NormalizedSpec) -> list[FieldError]:
    errors: list[FieldError] = []
    for i, plugin in enumerate(runtime_plugins(spec)):
        here = f"extras.{RUNTIME_PLUGINS}[{i}]"
        name = plugin.get("plugin")
        if name not in SUPPORTED_PLUGINS:
            supported = ", ".join(SUPPORTED_PLUGINS)
            errors.append((f"{here}.plugin", Message.of("config.runtime_plugin", name=str(name), supported=supported)))
        elif name == TENSORBOARD_PLUGIN and not (plugin.get("parameters") or {}).get("logdir"):
            errors.append((f"{here}.parameters.logdir", Message.of("config.tensorboard_logdir")))
    return errors + app_errors(spec)


def _hived_errors(hived: Mapping[str, Any]) -> list[FieldError]:  # every key: the refused ones too
    errors: list[FieldError] = []
    for key, value in hived.items():
        if key not in ("jobPriorityClass", "taskRoles") and value not in (None, False):
            errors.append((f"extras.hivedScheduler.{key}", Message.of("config.hived_option")))
    for role, hints in (hived.get("taskRoles") or {}).items():
        for key, value in (hints or {}).items():
            if key not in HIVED_ROLE_KEYS and value is not None:
                errors.append((f"extras.hivedScheduler.taskRoles.{role}.{key}", Message.of("config.hived_role_option")))
    return errors
