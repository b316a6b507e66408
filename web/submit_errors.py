"""Where the Submit Job page shows an error: a config error's path -> the form field it belongs
to, or the line of the pasted text it points at; each error in the reader's language, by its code
(web.texts)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

import yaml
from django.utils.translation import gettext_lazy as _

from jobs.protocol.errors import FieldError
from jobs.protocol.parsing import compose_nodes
from web.texts import translated

# --- error paths -> form fields -----------------------------------------------------------------

PATH_PART = re.compile(r"[^.\[\]]+|\[\d+\]")

ROLE_PATH_FIELDS = {
    "instances": "instances",
    "resourcePerInstance.gpu": "gpu",
    "resourcePerInstance.cpu": "cpu",
    "resourcePerInstance.memoryMB": "memory_mb",
    "resourcePerInstance.ports": "ports",
    "resourcePerInstance": "gpu",
    "extraContainerOptions.shmMB": "shm_mb",
    "commands": "command",
    "taskRetryCount": "task_retry_count",
    "completion.minFailedInstances": "min_failed",
    "completion.minSucceededInstances": "min_succeeded",
    "dockerImage": "image",
    "name": "name",
    # v1 names, when a v1 config was loaded into the form
    "taskNumber": "instances",
    "gpuNumber": "gpu",
    "cpuNumber": "cpu",
    "memoryMB": "memory_mb",
    "shmMB": "shm_mb",
    "portList": "ports",
    "command": "command",
    "minFailedTaskCount": "min_failed",
    "minSucceededTaskCount": "min_succeeded",
}
JOB_PATH_FIELDS = {
    "name": "name",
    "jobName": "name",
    "jobRetryCount": "job_retry_count",
    "retryCount": "job_retry_count",
    "defaults.virtualCluster": "virtual_cluster",
    "virtualCluster": "virtual_cluster",
    "extras.gpuType": "gpu_type",
    "gpuType": "gpu_type",
    "extras.hivedScheduler.jobPriorityClass": "priority",
    "extras.storages": "storages",
    "prerequisites": "image",
    "image": "image",
    "parameters": "parameters",
    "secrets": "secrets",
}


# The form's fields in page order, with their labels, for the error summary above the form.
JOB_FIELD_LABELS = {
    "name": _("Job name"),
    "virtual_cluster": _("Virtual cluster"),
    "gpu_type": _("GPU type"),
    "image": _("Docker image"),
    "job_retry_count": _("Retry count"),
    "priority": _("Priority"),
    "parameters": _("Parameters"),
    "secrets": _("Secrets"),
    "storages": _("Team storage"),
    "registry_username": _("Registry user"),
    "registry_password": _("Registry password"),
}
ROLE_FIELD_LABELS = {
    "name": _("Task role name"),
    "instances": _("Instances"),
    "gpu": _("GPUs per instance"),
    "cpu": _("CPUs per instance"),
    "memory_mb": _("Memory (MB)"),
    "shm_mb": _("Shared memory (MB)"),
    "ports": _("Ports"),
    "command": _("Commands"),
    "task_retry_count": _("Task retry count"),
    "min_failed": _("Min failed instances"),
    "min_succeeded": _("Min succeeded instances"),
}


@dataclass
class SummaryItem:
    field_id: str  # the input's id, for the link that jumps to it
    label: str
    message: str


def error_summary(by_field: dict[str, list[str]], role_names: list[str]) -> list[SummaryItem]:
    """Every field error in the order of the form, each linking to its field."""
    items = [
        SummaryItem(f"id_{name}", str(label), message)
        for name, label in JOB_FIELD_LABELS.items()
        for message in by_field.get(name, [])
    ]
    for position, role_name in enumerate(role_names):
        for name, label in ROLE_FIELD_LABELS.items():
            field = f"roles-{position}-{name}"
            items += [SummaryItem(field, f"{role_name or position + 1} · {label}", m) for m in by_field.get(field, [])]
    return items


def split_path(path: str) -> list[str]:
    """`taskRoles[0].resourcePerInstance.gpu` -> ["taskRoles", "[0]", "resourcePerInstance", "gpu"]."""
    return PATH_PART.findall(path or "")


def form_field_for(path: str, role_names: list[str]) -> str | None:
    """The form field an error path belongs to (`roles-1-gpu`, `name`), or None for the page top."""
    parts = split_path(path)
    if not parts:
        return None
    if parts[0] == "taskRoles" and len(parts) >= 2:
        role_key = parts[1]
        if role_key.startswith("["):
            position = int(role_key[1:-1])
        elif role_key in role_names:
            position = role_names.index(role_key)
        else:
            return None
        if position >= len(role_names):
            return None
        rest = parts[2:]
        for length in range(len(rest), 0, -1):
            suffix = ".".join(rest[:length])
            if suffix in ROLE_PATH_FIELDS:
                return f"roles-{position}-{ROLE_PATH_FIELDS[suffix]}"
        return f"roles-{position}-name" if not rest else None
    if parts[0] == "prerequisites" and "auth" in parts:
        return "registry_password" if parts[-1] == "password" else "registry_username"
    for length in range(len(parts), 0, -1):
        prefix = ".".join(parts[:length])
        if prefix in JOB_PATH_FIELDS:
            return JOB_PATH_FIELDS[prefix]
    return None


def said(errors: list[FieldError]) -> list[str]:
    """Each error as `field.path: message` in the reader's language (the message alone for the
    document's own)."""
    return [f"{path}: {translated(message)}" if path else translated(message) for path, message in errors]


def field_errors(errors: list[FieldError], role_names: list[str]) -> tuple[dict[str, list[str]], list[str]]:
    """Split errors into {form field: messages} and the ones that belong at the top of the form."""
    by_field: dict[str, list[str]] = {}
    general = []
    for path, said_here in errors:
        message = translated(said_here)
        name = form_field_for(path, role_names)
        if name is None:
            general.append(f"{path}: {message}" if path else message)
        else:
            by_field.setdefault(name, []).append(message)
    return by_field, general


@dataclass
class LineError:
    line: int | None
    path: str
    message: str


def line_errors(text: str, errors: list[FieldError], syntax_line: int | None = None) -> list[LineError]:
    """Each error with the 1-based line of the text its path points at (None when not found).
    An error without a path is a syntax error: it sits at `syntax_line` when the parser gave one."""
    root = compose_nodes(text)  # guarded against hostile nesting; JSON's `//` comments stripped
    return [
        LineError(syntax_line if not path else _line_of(root, path), path, translated(message))
        for path, message in errors
    ]


def _line_of(root: Any, path: str) -> int | None:
    """Walk the composed YAML along the path; the line of the deepest key or item found."""
    if root is None:
        return None
    node, line = root, root.start_mark.line + 1
    for part in split_path(path):
        if isinstance(node, yaml.SequenceNode) and part.startswith("["):
            position = int(part[1:-1])
            if position >= len(node.value):
                break
            node = node.value[position]
            line = node.start_mark.line + 1
        elif isinstance(node, yaml.MappingNode):
            found = next(((k, v) for k, v in node.value if getattr(k, "value", None) == part), None)
            if found is None:
                break
            line, node = found[0].start_mark.line + 1, found[1]
        else:
            break
    return line
