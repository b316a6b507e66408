"""Interactive apps: the web servers a job declares, which the portal opens through its proxy.

Three runtime plugins (`extras.com.microsoft.pai.runtimeplugin`) declare one each, served by the
first task of a task role:
- `jupyter` (the portal's): JupyterLab or Notebook on an allocated `jupyter` port;
- `tensorboard` (OpenPAI's): TensorBoard on its `tensorboard` port;
- `http` (the portal's): any port the task role declares, e.g. `{plugin: http, parameters: {port: web}}`.
Each may say `idleMinutes` (stopped after that long without traffic; Jupyter: and no busy kernel)
and `users` (who else may open it). Pure: the portal's defaults are applied by its caller.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from catalogue import Message
from jobs.protocol import texts
from jobs.protocol.errors import FieldError
from jobs.protocol.hooks import (
    JUPYTER_INTERFACES,
    JUPYTER_PLUGIN,
    JUPYTER_PORT_LABEL,
    RUNTIME_PLUGINS,
    TENSORBOARD_PLUGIN,
    TENSORBOARD_PORT_LABEL,
    plugin_role,
    runtime_plugins,
    tensorboard_role,
)
from jobs.protocol.spec import NormalizedSpec

HTTP_PLUGIN = "http"
APP_PLUGINS = (JUPYTER_PLUGIN, TENSORBOARD_PLUGIN, HTTP_PLUGIN)
MAX_IDLE_MINUTES = 7 * 24 * 60


@dataclass(frozen=True)
class AppSpec:
    kind: str  # jupyter, tensorboard or http
    role: str  # served by this role's first task
    port_label: str
    idle_minutes: float | None  # None: the portal's default
    users: tuple[str, ...]  # who may open it besides the job's owner


def declared_apps(spec: NormalizedSpec) -> list[AppSpec]:
    """The apps of a valid spec, in the order its plugins name them (one per port label)."""
    apps: dict[tuple[str, str], AppSpec] = {}
    for plugin in runtime_plugins(spec):
        kind = plugin.get("plugin")
        if kind not in APP_PLUGINS:
            continue
        parameters = plugin.get("parameters") or {}
        role = tensorboard_role(spec) if kind == TENSORBOARD_PLUGIN else plugin_role(spec, plugin)
        label = {JUPYTER_PLUGIN: JUPYTER_PORT_LABEL, TENSORBOARD_PLUGIN: TENSORBOARD_PORT_LABEL}.get(
            kind, str(parameters.get("port", ""))
        )
        if role is None or not label:
            continue
        idle = parameters.get("idleMinutes")
        users = tuple(str(user) for user in parameters.get("users") or [])
        apps.setdefault((role, label), AppSpec(kind, role, label, float(idle) if idle else None, users))
    return list(apps.values())


def reserve_jupyter_port(spec: NormalizedSpec) -> None:
    """The jupyter plugin's port is allocated like any other: one `jupyter` port on its role."""
    for plugin in runtime_plugins(spec):
        if plugin.get("plugin") == JUPYTER_PLUGIN and (role := plugin_role(spec, plugin)) is not None:
            ports = spec["taskRoles"][role]["resourcePerInstance"]["ports"]
            ports[JUPYTER_PORT_LABEL] = max(int(ports.get(JUPYTER_PORT_LABEL, 0)), 1)


def app_errors(spec: NormalizedSpec) -> list[FieldError]:
    """What is wrong with an app plugin's parameters, each naming its field."""
    errors: list[FieldError] = []
    for i, plugin in enumerate(runtime_plugins(spec)):
        kind = plugin.get("plugin")
        if kind not in APP_PLUGINS:
            continue
        here = f"extras.{RUNTIME_PLUGINS}[{i}]"
        parameters = plugin.get("parameters")
        if parameters is not None and not isinstance(parameters, dict):
            errors.append((f"{here}.parameters", texts.must_be(["object"])))
            continue
        parameters = parameters or {}
        errors.extend(_common_errors(parameters, f"{here}.parameters"))
        if kind == JUPYTER_PLUGIN and parameters.get("interface", "lab") not in JUPYTER_INTERFACES:
            errors.append((f"{here}.parameters.interface", Message.of("config.jupyter_interface")))
        if kind == HTTP_PLUGIN:
            errors.extend(_http_port_errors(spec, plugin, parameters, f"{here}.parameters.port"))
    return errors


def _common_errors(parameters: dict[str, Any], here: str) -> list[FieldError]:
    errors: list[FieldError] = []
    idle = parameters.get("idleMinutes")
    if idle is not None and (
        isinstance(idle, bool) or not isinstance(idle, int | float) or not 0 < idle <= MAX_IDLE_MINUTES
    ):
        errors.append((f"{here}.idleMinutes", Message.of("config.idle_minutes", most=MAX_IDLE_MINUTES)))
    users = parameters.get("users")
    if users is not None and (not isinstance(users, list) or not all(isinstance(u, str) and u for u in users)):
        errors.append((f"{here}.users", Message.of("config.user_list")))
    return errors


def _http_port_errors(
    spec: NormalizedSpec, plugin: dict[str, Any], parameters: dict[str, Any], here: str
) -> list[FieldError]:
    label = parameters.get("port")
    role = plugin_role(spec, plugin)
    if not isinstance(label, str) or not label:
        return [(here, Message.of("config.http_port_name"))]
    if role is None or label not in spec["taskRoles"][role]["resourcePerInstance"]["ports"]:
        return [(here, Message.of("config.http_port_unknown", role=str(role), label=label))]
    if label == "ssh":
        return [(here, Message.of("config.http_port_ssh"))]
    return []
