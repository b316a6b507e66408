"""The Submit Job page's form: its fields <-> a v2 config, and the config-file import.

The form shows the common part of a v2 config, with OpenPAI webportal's Tools (SSH, TensorBoard,
priority) and Data (team storages, registry auth) sections. Whatever it has no field for
(prerequisite scripts, the ssh barrier, notifications, ...) travels in a hidden `base_config`, is
shown read-only under "Other settings" (`other_settings`) and is merged back, so a YAML -> form ->
YAML round trip keeps it. A field changes the config only where its value changed, so a round
trip writes back what was read. Secret values never travel in `base_config`: they are the form's
password inputs. Where an error is shown is web.submit_errors' job.
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

from catalogue import Message
from jobs.protocol import JobConfigError, priority
from jobs.protocol.export import SafeDumper
from jobs.protocol.hooks import JUPYTER_PLUGIN
from jobs.protocol.parsing import check_tree
from jobs.protocol.spec import RUNTIME_PLUGINS
from jobs.protocol.storages import TEAMWISE_STORAGE_PLUGIN
from jobs.ssh.plugin import as_bool
from web.submit_errors import said

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
JOB_FIELDS = (
    "name",
    "virtual_cluster",
    "gpu_type",
    "image",
    "job_retry_count",
    "priority",
    "parameters",
    "secrets",
    # Tools
    "jobssh",
    "ssh_keys",
    "tensorboard",
    "tensorboard_logdir",
    "jupyter",
    # Data
    "storages",
    "registry_username",
    "registry_password",
    "registry_uri",
)
UNSTRIPPED = ("parameters", "secrets", "ssh_keys", "registry_password")
PRIORITY_CLASSES = tuple(priority.PRIORITY_CLASSES)  # HiveD's, highest first
DEFAULT_TENSORBOARD_LOGDIR = "/mnt/tensorboard"
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
            jobssh="on",
        )
        return cls(job=job)

    @classmethod
    def from_post(cls, data: QueryDict) -> JobFormData:
        job = {key: data.get(key, "").strip() if key not in UNSTRIPPED else data.get(key, "") for key in JOB_FIELDS}
        if "tools_shown" not in data:  # a post from before the Tools section: SSH as the protocol's default
            job["jobssh"] = "on"
        job["storages"] = "\n".join(name for name in data.getlist("storages") if name.strip())
        if "secret_name" in data:  # the secrets' rows: a name and a password input each
            rows = zip(data.getlist("secret_name"), data.getlist("secret_value"), strict=False)
            job["secrets"] = "\n".join(f"{name.strip()}={value}" for name, value in rows if name.strip() or value)
        by_index: dict[int, dict[str, str]] = {}
        for key in data:
            match = ROLE_KEY.match(key)
            if match and match.group(2) in ROLE_FIELDS:
                by_index.setdefault(int(match.group(1)), {})[match.group(2)] = data.get(key, "")
        roles = [{name: values.get(name, "") for name in ROLE_FIELDS} for _index, values in sorted(by_index.items())]
        try:
            base = _base_config(data.get("base_config") or "{}")
        except JobConfigError as error:
            problem = _("The form's hidden config is not valid: %s") % "; ".join(said(error.errors))
            return cls(job=job, roles=roles, problems=[problem])
        return cls(job=job, roles=roles, base_config=base)

    @property
    def base_config_json(self) -> str:
        return json.dumps(_without_secret_values(self.base_config))

    @property
    def secret_rows(self) -> list[tuple[str, str]]:
        """(name, value) of each secret, then one blank row to add a secret without JavaScript."""
        rows = [(key, value or "") for _n, key, value in _key_value_lines(self.job.get("secrets", ""))]
        return [*rows, ("", "")]

    @property
    def chosen_storages(self) -> list[str]:
        return [name for name in self.job.get("storages", "").splitlines() if name.strip()]

    @property
    def other_settings(self) -> str:
        """What the config holds that no field of the form shows, as YAML ("" when nothing)."""
        other = other_settings(self.base_config)
        return config_to_yaml(other) if other else ""


def _without_secret_values(config: dict[str, Any]) -> dict[str, Any]:
    """The config minus what is secret: the secrets (the form's rows hold them) and registry
    passwords (the Data section's password input holds the image's)."""
    kept = {key: value for key, value in config.items() if key != "secrets"}
    prerequisites = config.get("prerequisites")
    if isinstance(prerequisites, list):
        kept["prerequisites"] = [
            {**p, "auth": {k: v for k, v in p["auth"].items() if k != "password"}}
            if isinstance(p, dict) and isinstance(p.get("auth"), dict)
            else p
            for p in prerequisites
        ]
    return kept


def _base_config(text: str) -> dict[str, Any]:
    """The hidden config a YAML -> form round trip keeps; bounded like any submitted config."""
    try:
        base = json.loads(text)
    except (ValueError, RecursionError):
        raise JobConfigError([("base_config", Message.of("config.form_base_not_json"))]) from None
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
    # Lines end only at a line break (str.splitlines also splits at \x1c-\x1e, \x85 and \u2028,
    # which a value may hold).
    for number, line in enumerate(text.replace("\r\n", "\n").replace("\r", "\n").split("\n"), 1):
        if not line.strip():
            continue
        key, sep, value = line.partition("=")
        found.append((number, key.strip(), value.strip() if sep else None))
    return found


def _typed(text: str) -> Any:
    """A value as YAML would type it when the text is that value's own spelling (`3` -> 3,
    `0.5` -> 0.5, `true` -> True), so numbers stay numbers through the form; any other text
    (`007`, `1e3`, `yes`) stays the text the user typed."""
    try:
        value = yaml.safe_load(text)
    except yaml.YAMLError:
        return text
    if isinstance(value, bool):
        return value if text in ("true", "false") else text
    if isinstance(value, int | float) and _text(value) == text:
        return value
    return text


def _key_values(text: str, before: Any = None) -> dict[str, Any]:
    """name -> value of the lines; a value whose text did not change keeps its type from `before`
    (the config the form was filled from: "100" stays a string, 100 a number), and a text the form
    showed quoted (_shown) stays the text it was."""
    before = before if isinstance(before, dict) else {}
    return {
        key: before[key] if key in before and _shown(before[key]) == value else _typed(value)
        for _n, key, value in _key_value_lines(text)
        if key and value is not None
    }


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
            if field_name == "secrets" and not key:
                # A secret's value is not quoted back.
                errors.setdefault(field_name, []).append(gettext("Secret %(row)d has no name.") % {"row": number})
            elif value is None or not key:
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
    original = config_to_form(data.base_config).job if data.base_config else {}

    image_name = _image_prerequisite_name(config)
    prerequisites = [p for p in _list(config.get("prerequisites")) if isinstance(p, dict)]
    image = next((p for p in prerequisites if p.get("name") == image_name), None)
    if image is None:
        image = {"name": image_name, "type": "dockerimage"}
        prerequisites.insert(0, image)
    if _text(image.get("uri")).strip() != data.job.get("image", ""):  # unchanged: kept as written
        image["uri"] = data.job.get("image", "")
    _registry_auth_to_config(image, data.job)
    config["prerequisites"] = prerequisites

    _set(config, "parameters", _key_values(data.job.get("parameters", ""), config.get("parameters")))
    # Secrets stay the text typed: a secret is only ever substituted as text, and no page shows it.
    secret_lines = _key_value_lines(data.job.get("secrets", ""))
    _set(config, "secrets", {key: value for _n, key, value in secret_lines if key and value is not None})

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
    changed = {key for key in JOB_FIELDS if data.job.get(key, "") != original.get(key, blank_tools().get(key, ""))}
    _priority_to_config(extras, data.job, changed)
    _ssh_to_config(extras, data.job, changed)
    _tensorboard_to_config(extras, data.job, changed)
    _jupyter_to_config(extras, data.job, changed)
    _storages_to_config(extras, data.job, changed)
    _set(config, "extras", extras)
    return config


def blank_tools() -> dict[str, str]:
    """What the Tools and Data fields say for a config that has none of them."""
    return {"jobssh": "on"}


def _plugins(extras: dict[str, Any]) -> list[Any]:
    plugins = extras.get(RUNTIME_PLUGINS)
    if isinstance(plugins, dict):
        return [plugins]
    return list(plugins) if isinstance(plugins, list) else []


def _set_plugins(extras: dict[str, Any], plugins: list[Any]) -> None:
    _set(extras, RUNTIME_PLUGINS, plugins or None)


def _plugin(plugins: list[Any], name: str) -> dict[str, Any] | None:
    return next((p for p in plugins if isinstance(p, dict) and p.get("plugin") == name), None)


def _priority_to_config(extras: dict[str, Any], job: dict[str, str], changed: set[str]) -> None:
    if "priority" not in changed:
        return
    hived = _dict(extras.get("hivedScheduler"))
    _set(hived, "jobPriorityClass", job.get("priority", ""))
    _set(extras, "hivedScheduler", hived)


def _ssh_to_config(extras: dict[str, Any], job: dict[str, str], changed: set[str]) -> None:
    if not changed & {"jobssh", "ssh_keys"}:
        return
    plugins = _plugins(extras)
    entry = _plugin(plugins, "ssh")
    if entry is None:
        entry = {"plugin": "ssh"}
        plugins.append(entry)
    parameters = _dict(entry.get("parameters"))
    for key in ("jobssh", "userssh"):  # a scraped config's keys beside `plugin:` move under parameters
        if key in entry:
            parameters.setdefault(key, entry.pop(key))
    if "jobssh" in changed:
        parameters["jobssh"] = job.get("jobssh") == "on"
    if "ssh_keys" in changed:
        keys = job.get("ssh_keys", "").strip()
        _set(parameters, "userssh", {"type": "custom", "value": keys} if keys else None)
    entry["parameters"] = parameters
    _set_plugins(extras, plugins)


def _tensorboard_to_config(extras: dict[str, Any], job: dict[str, str], changed: set[str]) -> None:
    if not changed & {"tensorboard", "tensorboard_logdir"}:
        return
    plugins = [p for p in _plugins(extras) if not (isinstance(p, dict) and p.get("plugin") == "tensorboard")]
    if job.get("tensorboard") == "on":
        entry = _plugin(_plugins(extras), "tensorboard") or {"plugin": "tensorboard"}
        parameters = _dict(entry.get("parameters"))
        parameters["logdir"] = _logdirs(job.get("tensorboard_logdir", "") or DEFAULT_TENSORBOARD_LOGDIR)
        plugins.append({**entry, "parameters": parameters})
    _set_plugins(extras, plugins)


def _jupyter_to_config(extras: dict[str, Any], job: dict[str, str], changed: set[str]) -> None:
    """The jupyter plugin (jobs/protocol/interactive.py) on or off; its parameters kept."""
    if "jupyter" not in changed:
        return
    plugins = [p for p in _plugins(extras) if not (isinstance(p, dict) and p.get("plugin") == JUPYTER_PLUGIN)]
    if job.get("jupyter") == "on":
        plugins.append(_plugin(_plugins(extras), JUPYTER_PLUGIN) or {"plugin": JUPYTER_PLUGIN})
    _set_plugins(extras, plugins)


def _logdirs(text: str) -> dict[str, str]:
    """`/mnt/tb` -> {path: /mnt/tb}; `a:/mnt/a, b:/mnt/b` -> {a: /mnt/a, b: /mnt/b} (OpenPAI's logdir)."""
    found: dict[str, str] = {}
    for item in (part.strip() for part in text.split(",")):
        if not item:
            continue
        name, sep, path = item.partition(":")
        if sep and not item.startswith("/"):
            found[name.strip()] = path.strip()
        else:
            found["path" if "path" not in found else f"path{len(found)}"] = item
    return found


def _storages_to_config(extras: dict[str, Any], job: dict[str, str], changed: set[str]) -> None:
    """The team storages ticked, as `extras.storages` (which wins over a teamwise_storage plugin
    in OpenPAI's rest-server too); a storage kept keeps its mountPath."""
    if "storages" not in changed:
        return
    names = [name for name in job.get("storages", "").splitlines() if name.strip()]
    before = {item.get("name"): item for item in _list(extras.get("storages")) if isinstance(item, dict)}
    _set_plugins(
        extras,
        [p for p in _plugins(extras) if not (isinstance(p, dict) and p.get("plugin") == TEAMWISE_STORAGE_PLUGIN)],
    )
    _set(extras, "storages", [before.get(name) or {"name": name} for name in names] or None)


def _registry_auth_to_config(image: dict[str, Any], job: dict[str, str]) -> None:
    """The image's registry auth from the Data section's three fields (the password is a
    password input; an inline one becomes a secret at submit, as in any config)."""
    auth = _dict(image.get("auth"))
    for key, name in (
        ("username", "registry_username"),
        ("password", "registry_password"),
        ("registryuri", "registry_uri"),
    ):
        _set(auth, key, job.get(name, "").strip())
    _set(image, "auth", auth)


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
    typed = [line for line in role.get("command", "").splitlines() if line.strip()]
    before = base.get("commands")
    if not (isinstance(before, list) and _command_lines(before) == typed):
        # The text changed: one command per line. Unchanged, the commands stay as written (a
        # block scalar's final newline, a command of several lines).
        base["commands"] = typed
    return base


def _command_lines(commands: list[Any]) -> list[str]:
    return [line for line in "\n".join(_text(c) for c in commands).splitlines() if line.strip()]


def _image_prerequisite_name(config: dict[str, Any]) -> str:
    roles = config.get("taskRoles")
    if isinstance(roles, dict):
        for role in roles.values():
            if isinstance(role, dict) and isinstance(role.get("dockerImage"), str):
                return role["dockerImage"]
    return DEFAULT_IMAGE_NAME


def config_to_yaml(config: dict[str, Any]) -> str:
    return yaml.dump(config, Dumper=SafeDumper, sort_keys=False, allow_unicode=True, default_flow_style=False)


# --- config -> form -----------------------------------------------------------------------------


def _dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _text(value: Any) -> str:
    return "" if value is None else str(value)


def _shown(value: Any) -> str:
    """A value on one `name=value` line of the form: a text with line breaks or spaces at either
    end (which the line would lose) JSON-quoted, anything else as _text."""
    if isinstance(value, str) and (value != value.strip() or "\n" in value or "\r" in value):
        return json.dumps(value)
    return _text(value)


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
    image = next((p for p in prerequisites if isinstance(p, dict) and p.get("name") == image_name), {})
    image_uri = image.get("uri", "")
    defaults = _dict(config.get("defaults"))
    extras = _dict(config.get("extras"))
    parameters = _dict(config.get("parameters"))
    secrets = _dict(config.get("secrets"))
    job = {
        "name": _text(config.get("name")),
        "virtual_cluster": _text(defaults.get("virtualCluster") or "default"),
        "gpu_type": _text(extras.get("gpuType")),
        "image": _text(image_uri),
        "job_retry_count": _text(config.get("jobRetryCount", "")),
        "priority": _text(_dict(extras.get("hivedScheduler")).get("jobPriorityClass")),
        "parameters": "\n".join(f"{key}={_shown(value)}" for key, value in parameters.items()),
        "secrets": "\n".join(f"{key}={_text(value)}" for key, value in secrets.items()),
        **_tools_of(extras),
        **_registry_auth_of(image),
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
                "task_retry_count": _text(role.get("taskRetryCount", "")),
                "min_failed": _threshold(completion, "minFailedInstances"),
                "min_succeeded": _threshold(completion, "minSucceededInstances"),
            }
        )
    return JobFormData(job=job, roles=roles or [default_role()], base_config=copy.deepcopy(config))


def _tools_of(extras: dict[str, Any]) -> dict[str, str]:
    plugins = _plugins(extras)
    ssh = _plugin(plugins, "ssh") or {}
    ssh_parameters = {k: v for k, v in ssh.items() if k not in ("plugin", "parameters")}
    ssh_parameters.update(_dict(ssh.get("parameters")))
    jobssh = as_bool(ssh_parameters.get("jobssh"), default=True)  # as the ssh runtime reads it
    userssh = ssh_parameters.get("userssh")
    keys = userssh.get("value") if isinstance(userssh, dict) else userssh
    tensorboard = _plugin(plugins, "tensorboard")
    logdirs = _dict((tensorboard or {}).get("parameters")).get("logdir")
    if isinstance(logdirs, dict):
        logdir = ", ".join(_text(p) if n.startswith("path") else f"{n}:{_text(p)}" for n, p in logdirs.items())
    else:
        logdir = _text(logdirs)
    return {
        "jobssh": "on" if jobssh else "",
        "ssh_keys": "\n".join(_text(k) for k in keys) if isinstance(keys, list) else _text(keys),
        "tensorboard": "on" if tensorboard is not None else "",
        "tensorboard_logdir": logdir if tensorboard is not None else "",
        "jupyter": "on" if _plugin(plugins, JUPYTER_PLUGIN) is not None else "",
        "storages": "\n".join(_storage_names(extras, plugins)),
    }


def _storage_names(extras: dict[str, Any], plugins: list[Any]) -> list[str]:
    """The storages a config names, read as jobs.protocol.storages does (`extras.storages` wins
    over the teamwise_storage plugin), on a config not validated yet: what is not a name is left
    to the protocol to report."""
    if extras.get("storages") is not None:
        items = _list(extras.get("storages"))
        return [item["name"].strip() for item in items if isinstance(item, dict) and isinstance(item.get("name"), str)]
    teamwise = _plugin(plugins, TEAMWISE_STORAGE_PLUGIN) or {}
    names = _list(_dict(teamwise.get("parameters")).get("storageConfigNames"))
    return [name.strip() for name in names if isinstance(name, str) and name.strip()]


def _registry_auth_of(image: dict[str, Any]) -> dict[str, str]:
    auth = _dict(image.get("auth"))
    return {
        "registry_username": _text(auth.get("username")),
        "registry_password": _text(auth.get("password")),
        "registry_uri": _text(auth.get("registryuri")),
    }


# --- what the form has no field for ---------------------------------------------------------------

ROLE_OWNED = {
    "instances": None,
    "taskRetryCount": None,
    "dockerImage": None,
    "commands": None,
    "completion": {"minFailedInstances": None, "minSucceededInstances": None},
    "resourcePerInstance": {"gpu": None, "cpu": None, "memoryMB": None, "ports": None},
    "extraContainerOptions": {"shmMB": None},
}
JOB_OWNED = {
    "protocolVersion": None,
    "name": None,
    "type": None,
    "jobRetryCount": None,
    "parameters": None,
    "secrets": None,
    "defaults": {"virtualCluster": None},
    "extras": {"gpuType": None, "storages": None, "hivedScheduler": {"jobPriorityClass": None}},
}


def _without(value: dict[str, Any], owned: dict[str, Any]) -> dict[str, Any]:
    """`value` minus the keys `owned` names (None: the whole key; a dict: those keys inside);
    a dict left empty by the removal goes too."""
    kept: dict[str, Any] = {}
    for key, item in value.items():
        if key not in owned:
            kept[key] = item
        elif isinstance(owned[key], dict) and isinstance(item, dict):
            rest = _without(item, owned[key])
            if rest or not item:
                kept[key] = rest
    return kept


def other_settings(config: dict[str, Any]) -> dict[str, Any]:
    """The part of a config no field of the form shows: the form's "Other settings"."""
    other = _without(config, JOB_OWNED)
    image_name = _image_prerequisite_name(config)
    prerequisites = []
    for prerequisite in _list(config.get("prerequisites")):
        if isinstance(prerequisite, dict) and prerequisite.get("name") == image_name:
            rest = _without(prerequisite, {"uri": None, "type": None, "auth": None, "name": None})
            if not rest:
                continue
            prerequisite = {"name": image_name, **rest}
        prerequisites.append(prerequisite)
    _set(other, "prerequisites", prerequisites or None)
    roles = {
        name: rest
        for name, role in _dict(config.get("taskRoles")).items()
        if (rest := _without(role if isinstance(role, dict) else {}, ROLE_OWNED))
    }
    _set(other, "taskRoles", roles or None)
    extras = _dict(other.get("extras"))
    plugins = []
    for plugin in _plugins(extras):
        name = plugin.get("plugin") if isinstance(plugin, dict) else None
        name = name if isinstance(name, str) else ""  # not validated yet: `plugin: [1]` is kept, shown
        # What a field shows: ssh's jobssh and userssh, tensorboard's logdir, the storages named.
        shown = {
            "ssh": ("jobssh", "userssh"),
            "tensorboard": ("logdir",),
            JUPYTER_PLUGIN: (),
            TEAMWISE_STORAGE_PLUGIN: (),
        }.get(name)
        if shown is not None:
            if name == TEAMWISE_STORAGE_PLUGIN and _storage_names({}, [plugin]):
                shown = ("storageConfigNames",)  # an empty list (the user's default storages) stays shown
            owned: dict[str, Any] = dict.fromkeys(shown)
            parameters = _without(_dict(plugin.get("parameters")), owned)
            beside = _without(plugin, {"plugin": None, "parameters": None, **owned})
            if not parameters and not beside and (name != TEAMWISE_STORAGE_PLUGIN or shown):
                continue
            plugin = {"plugin": name, **beside, **({"parameters": parameters} if parameters else {})}
        plugins.append(plugin)
    if RUNTIME_PLUGINS in extras:
        extras = {**extras}
        _set_plugins(extras, plugins)
        _set(other, "extras", extras or None)
    return other


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
