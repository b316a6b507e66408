"""The Submit Job page's form: its fields <-> a v2 config, and the config-file import.

The form shows the common part of a v2 config. Whatever it cannot show (prerequisite scripts,
runtime plugins, ...) travels in a hidden `base_config` and is merged back, so a YAML -> form ->
YAML round trip keeps it. Where an error is shown is web.submit_errors' job.
"""

from __future__ import annotations

import copy
import json
import re
import secrets
from dataclasses import dataclass, field
from typing import Any

import yaml
from django import forms
from django.conf import settings
from django.http import QueryDict
from django.utils.translation import gettext
from django.utils.translation import gettext_lazy as _

from jobs.protocol import JobConfigError
from jobs.protocol.parsing import check_tree

MAX_CONFIG_FILE_BYTES = 512 * 1024
CONFIG_FILE_SUFFIXES = (".json", ".yaml", ".yml")
DEFAULT_IMAGE_NAME = "docker_image_0"

ROLE_FIELDS = (
    "name",
    "instances",
    "gpu",
    "cpu",
    "memory_mb",
    "shm_mb",
    "ports",
    "command",
    "task_retry_count",
    "min_failed",
    "min_succeeded",
)
JOB_FIELDS = ("name", "virtual_cluster", "gpu_type", "image", "job_retry_count", "parameters", "secrets")
ROLE_KEY = re.compile(r"^roles-(\d+)-(\w+)$")
DEFAULT_COMMAND = "echo hello"
# A completion threshold of -1 (or null) means "no threshold"; a blank field means the protocol's default.
NO_THRESHOLD = "-1"
NOT_IN_JOB_NAMES = re.compile(r"[^A-Za-z0-9_-]")


def default_role() -> dict[str, str]:
    """A role that runs as it is: one small task saying hello on the default image."""
    return {
        "name": "taskrole",
        "instances": "1",
        "gpu": "0",
        "cpu": "1",
        "memory_mb": "1024",
        "shm_mb": "64",
        "ports": "",
        "command": DEFAULT_COMMAND,
        "task_retry_count": "0",
        "min_failed": "",
        "min_succeeded": "",
    }


def fresh_job_name(username: str) -> str:
    """`<user>_<hex>` as OpenPAI proposes it: unique enough to submit a fresh form as it is."""
    return f"{NOT_IN_JOB_NAMES.sub('_', username) or 'job'}_{secrets.token_hex(4)}"


@dataclass
class JobFormData:
    """What the form holds: every value as the text the user typed, so nothing is lost on an error."""

    job: dict[str, str] = field(default_factory=dict)
    roles: list[dict[str, str]] = field(default_factory=lambda: [default_role()])
    base_config: dict[str, Any] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)  # what was wrong with the post itself

    @classmethod
    def blank(cls, username: str = "", virtual_cluster: str = "default") -> JobFormData:
        """The fresh form: it submits as it is (a named job running `echo hello` on the default image)."""
        job = dict.fromkeys(JOB_FIELDS, "")
        job.update(
            name=fresh_job_name(username) if username else "",
            virtual_cluster=virtual_cluster,
            image=str(settings.PAI_DEFAULT_IMAGE),
            job_retry_count="0",
        )
        return cls(job=job)

    @classmethod
    def from_post(cls, data: QueryDict) -> JobFormData:
        job = {
            key: data.get(key, "").strip() if key not in ("parameters", "secrets") else data.get(key, "")
            for key in JOB_FIELDS
        }
        by_index: dict[int, dict[str, str]] = {}
        for key in data:
            match = ROLE_KEY.match(key)
            if match and match.group(2) in ROLE_FIELDS:
                by_index.setdefault(int(match.group(1)), {})[match.group(2)] = data.get(key, "")
        roles = [{name: values.get(name, "") for name in ROLE_FIELDS} for _index, values in sorted(by_index.items())]
        try:
            base = _base_config(data.get("base_config") or "{}")
        except JobConfigError as error:
            return cls(job=job, roles=roles, problems=[_("The form's hidden config is not valid: %s") % error])
        return cls(job=job, roles=roles, base_config=base)

    @property
    def base_config_json(self) -> str:
        return json.dumps(self.base_config)


def _base_config(text: str) -> dict[str, Any]:
    """The hidden config a YAML -> form round trip keeps; bounded like any submitted config."""
    try:
        base = json.loads(text)
    except (ValueError, RecursionError):
        raise JobConfigError([("base_config", "not valid JSON")]) from None
    if not isinstance(base, dict):
        return {}
    check_tree(base)
    return base


# --- form -> config -----------------------------------------------------------------------------


def _number(text: str) -> int | str | None:
    """The typed number, or the text itself so the protocol reports it beside the field."""
    text = text.strip()
    if not text:
        return None
    try:
        return int(text)
    except ValueError:
        return text


def _key_value_lines(text: str) -> list[tuple[int, str, str | None]]:
    """(line number, name, value) of each non-blank `name=value` line; value None when the line has
    no `=` (reported by form_input_errors, never turned into a strange name)."""
    found = []
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        key, sep, value = line.partition("=")
        found.append((number, key.strip(), value.strip() if sep else None))
    return found


def _key_values(text: str) -> dict[str, str]:
    return {key: value for _n, key, value in _key_value_lines(text) if key and value is not None}


def _port_items(text: str) -> list[tuple[str, str | None]]:
    """(label, count text) of each `label:count` item; count None when the item has no `:`."""
    items = []
    for item in re.split(r"[,\s]+", text.strip()):
        if item:
            label, sep, count = item.partition(":")
            items.append((label, count if sep else None))
    return items


def _ports(text: str) -> dict[str, int | str]:
    ports: dict[str, int | str] = {}
    for label, count in _port_items(text):
        if count is not None:
            number = _number(count)
            ports[label] = number if number is not None else count
    return ports


def form_input_errors(data: JobFormData) -> dict[str, list[str]]:
    """What the form's own syntax cannot read (a parameter line without `=`, a port without a
    count), by form field: such input is reported beside its field, never silently changed."""
    errors: dict[str, list[str]] = {}
    for field_name in ("parameters", "secrets"):
        for number, key, value in _key_value_lines(data.job.get(field_name, "")):
            if value is None or not key:
                # A secret's line is not quoted back: it may be the value itself.
                errors.setdefault(field_name, []).append(gettext("Line %(line)d is not name=value.") % {"line": number})
    for index, role in enumerate(data.roles):
        for label, count in _port_items(role.get("ports", "")):
            if count is None:
                errors.setdefault(f"roles-{index}-ports", []).append(
                    gettext("%(item)s has no count: write %(item)s:1 for one port.") % {"item": label}
                )
    return errors


def _set(target: dict[str, Any], key: str, value: Any) -> None:
    """Set `key`, or drop it when the user left the field blank (the protocol's default applies)."""
    if value is None or value == "" or value == {}:
        target.pop(key, None)
    else:
        target[key] = value


def form_to_config(data: JobFormData) -> dict[str, Any]:
    """The v2 config the form describes, on top of what the form cannot show."""
    config = copy.deepcopy(data.base_config)
    config["protocolVersion"] = 2
    config["name"] = data.job.get("name", "")
    config["type"] = "job"
    _set(config, "jobRetryCount", _number(data.job.get("job_retry_count", "")))

    image_name = _image_prerequisite_name(config)
    prerequisites = [p for p in _list(config.get("prerequisites")) if isinstance(p, dict)]
    image = next((p for p in prerequisites if p.get("name") == image_name), None)
    if image is None:
        image = {"name": image_name, "type": "dockerimage"}
        prerequisites.insert(0, image)
    image["uri"] = data.job.get("image", "")
    config["prerequisites"] = prerequisites

    _set(config, "parameters", _key_values(data.job.get("parameters", "")))
    _set(config, "secrets", _key_values(data.job.get("secrets", "")))

    base_roles = list((config.get("taskRoles") or {}).values()) if isinstance(config.get("taskRoles"), dict) else []
    roles: dict[str, Any] = {}
    for position, role in enumerate(data.roles):
        base_role = base_roles[position] if position < len(base_roles) else {}
        base_role = base_role if isinstance(base_role, dict) else {}
        roles[role.get("name", "").strip()] = _role_to_config(role, copy.deepcopy(base_role), image_name)
    config["taskRoles"] = roles

    defaults = _dict(config.get("defaults"))
    _set(defaults, "virtualCluster", data.job.get("virtual_cluster", ""))
    _set(config, "defaults", defaults)
    extras = _dict(config.get("extras"))
    _set(extras, "gpuType", data.job.get("gpu_type", ""))
    _set(config, "extras", extras)
    return config


def _role_to_config(role: dict[str, str], base: dict[str, Any], image_name: str) -> dict[str, Any]:
    _set(base, "instances", _number(role.get("instances", "")))
    completion = _dict(base.get("completion"))
    # Blank: the protocol's default (1 failed task / all instances succeeded), as in a direct import.
    _set(completion, "minFailedInstances", _number(role.get("min_failed", "")))
    _set(completion, "minSucceededInstances", _number(role.get("min_succeeded", "")))
    _set(base, "completion", completion)
    _set(base, "taskRetryCount", _number(role.get("task_retry_count", "")))
    base["dockerImage"] = image_name
    resources = _dict(base.get("resourcePerInstance"))
    for key, name in (("gpu", "gpu"), ("cpu", "cpu"), ("memoryMB", "memory_mb")):
        _set(resources, key, _number(role.get(name, "")))
    _set(resources, "ports", _ports(role.get("ports", "")))
    base["resourcePerInstance"] = resources
    options = _dict(base.get("extraContainerOptions"))
    _set(options, "shmMB", _number(role.get("shm_mb", "")))
    _set(base, "extraContainerOptions", options)
    base["commands"] = [line for line in role.get("command", "").splitlines() if line.strip()]
    return base


def _image_prerequisite_name(config: dict[str, Any]) -> str:
    roles = config.get("taskRoles")
    if isinstance(roles, dict):
        for role in roles.values():
            if isinstance(role, dict) and isinstance(role.get("dockerImage"), str):
                return role["dockerImage"]
    return DEFAULT_IMAGE_NAME


def config_to_yaml(config: dict[str, Any]) -> str:
    return yaml.safe_dump(config, sort_keys=False, allow_unicode=True, default_flow_style=False)


# --- config -> form -----------------------------------------------------------------------------


def _dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _text(value: Any) -> str:
    return "" if value is None else str(value)


def _threshold(completion: dict[str, Any], key: str) -> str:
    """A completion threshold as the form shows it: absent -> blank (the default), null -> -1."""
    if key not in completion:
        return ""
    value = completion[key]
    return NO_THRESHOLD if value is None or value == -1 else _text(value)


def config_to_form(config: dict[str, Any]) -> JobFormData:
    """Fill the form from a v2 config (a parsed YAML or a job's normalized spec)."""
    image_name = _image_prerequisite_name(config)
    prerequisites = _list(config.get("prerequisites"))
    image_uri = next(
        (p.get("uri", "") for p in prerequisites if isinstance(p, dict) and p.get("name") == image_name), ""
    )
    defaults = _dict(config.get("defaults"))
    extras = _dict(config.get("extras"))
    parameters = _dict(config.get("parameters"))
    secrets = _dict(config.get("secrets"))
    job = {
        "name": _text(config.get("name")),
        "virtual_cluster": _text(defaults.get("virtualCluster") or "default"),
        "gpu_type": _text(extras.get("gpuType")),
        "image": _text(image_uri),
        "job_retry_count": _text(config.get("jobRetryCount", 0)),
        "parameters": "\n".join(f"{key}={_text(value)}" for key, value in parameters.items()),
        "secrets": "\n".join(f"{key}={_text(value)}" for key, value in secrets.items()),
    }
    roles = []
    task_roles = _dict(config.get("taskRoles"))
    for name, role in task_roles.items():
        role = role if isinstance(role, dict) else {}
        resources = _dict(role.get("resourcePerInstance"))
        options = _dict(role.get("extraContainerOptions"))
        completion = _dict(role.get("completion"))
        ports = _dict(resources.get("ports"))
        commands = role.get("commands") or []
        roles.append(
            {
                "name": _text(name),
                "instances": _text(role.get("instances", "")),
                "gpu": _text(resources.get("gpu", 0)),
                "cpu": _text(resources.get("cpu", 1)),
                "memory_mb": _text(resources.get("memoryMB", "")),
                "shm_mb": _text(options.get("shmMB", "")),
                "ports": ", ".join(f"{label}:{count}" for label, count in ports.items()),
                "command": "\n".join(_text(c) for c in commands) if isinstance(commands, list) else _text(commands),
                "task_retry_count": _text(role.get("taskRetryCount", 0)),
                "min_failed": _threshold(completion, "minFailedInstances"),
                "min_succeeded": _threshold(completion, "minSucceededInstances"),
            }
        )
    return JobFormData(job=job, roles=roles or [default_role()], base_config=copy.deepcopy(config))


# --- the Django form for the text modes -----------------------------------------------------------


class ConfigFileField(forms.FileField):
    def clean(self, data: Any, initial: Any = None) -> Any:
        upload = super().clean(data, initial)
        if upload is None:
            return upload
        if not upload.name.lower().endswith(CONFIG_FILE_SUFFIXES):
            raise forms.ValidationError(_("Import a .json, .yaml or .yml file."))
        if upload.size > MAX_CONFIG_FILE_BYTES:
            raise forms.ValidationError(
                _("The file is too large (%(size)d KB); the limit is %(limit)d KB."),
                params={"size": upload.size // 1024, "limit": MAX_CONFIG_FILE_BYTES // 1024},
            )
        return upload


class ImportFileForm(forms.Form):
    config_file = ConfigFileField(label=_("Config file"))

    def config_text(self) -> str:
        """The uploaded file's text; raises ValidationError when it is not UTF-8 text."""
        upload = self.cleaned_data["config_file"]
        raw = upload.read(MAX_CONFIG_FILE_BYTES + 1)
        try:
            return raw.decode("utf-8-sig")
        except UnicodeDecodeError as error:
            raise forms.ValidationError(_("The file is not UTF-8 text.")) from error
