"""The job's SSH settings from the v2 spec: OpenPAI's `ssh` runtime plugin. Pure (no Django).

```yaml
extras:
  com.microsoft.pai.runtimeplugin:
    - plugin: ssh
      parameters:
        jobssh: true            # `ssh <taskrole>-<index>` between the job's tasks (default on)
        sshbarrier: true        # every task waits until all tasks' sshd answer (default off)
        sshbarrierTaskRoles: [worker]   # only these roles (default: all)
        sshbarrierTimeout: 30   # minutes (default 30); exit 249 when it runs out
        userssh: {type: custom, value: "ssh-ed25519 AAAA... me@laptop"}
        publicKeys: ["ssh-ed25519 AAAA..."]
```
Scraped configs sometimes lost the `parameters:` key, so keys beside `plugin:` count too.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from jobs.protocol.spec import RUNTIME_PLUGINS, NormalizedSpec

DEFAULT_BARRIER_TIMEOUT_MINUTES = 30


@dataclass(frozen=True)
class SshSettings:
    jobssh: bool = True
    sshbarrier: bool = False
    barrier_roles: tuple[str, ...] = ()  # empty: every role
    barrier_timeout_s: int = DEFAULT_BARRIER_TIMEOUT_MINUTES * 60
    public_keys: tuple[str, ...] = ()


def _plugin_parameters(spec: NormalizedSpec) -> dict[str, Any]:
    plugins = (spec.get("extras") or {}).get(RUNTIME_PLUGINS) or []
    if isinstance(plugins, dict):
        plugins = [plugins]
    for entry in plugins:
        if isinstance(entry, dict) and entry.get("plugin") == "ssh":
            params = {k: v for k, v in entry.items() if k not in ("plugin", "parameters")}
            params.update(entry.get("parameters") or {})
            return params
    return {}


def as_bool(value: Any, default: bool) -> bool:
    """A parameter's truth: a text is true when it says so (1, true, yes, on); None is the default."""
    if value is None:
        return default
    if isinstance(value, str):
        return value.strip().lower() in {"1", "true", "yes", "on"}
    return bool(value)


def _key_lines(value: Any) -> list[str]:
    """Public keys from a string (one per line), a list, or OpenPAI's {type, value}."""
    if isinstance(value, dict):
        value = value.get("value")
    if isinstance(value, str):
        value = value.splitlines()
    if not isinstance(value, list):
        return []
    return [line.strip() for line in value if isinstance(line, str) and line.strip()]


def ssh_settings(spec: NormalizedSpec) -> SshSettings:
    params = _plugin_parameters(spec)
    barrier = params.get("sshbarrier")
    # An older schema gave sshbarrier as the list of roles to wait for.
    roles = params.get("sshbarrierTaskRoles") or params.get("sshbarriertaskroles") or []
    if isinstance(barrier, list):
        roles, barrier = barrier, True
    timeout_minutes = params.get("sshbarrierTimeout") or DEFAULT_BARRIER_TIMEOUT_MINUTES
    try:
        timeout_s = max(1, int(float(timeout_minutes) * 60))
    except (TypeError, ValueError):
        timeout_s = DEFAULT_BARRIER_TIMEOUT_MINUTES * 60
    return SshSettings(
        jobssh=as_bool(params.get("jobssh"), True),
        sshbarrier=as_bool(barrier, False),
        barrier_roles=tuple(str(role) for role in roles if isinstance(role, str)),
        barrier_timeout_s=timeout_s,
        public_keys=tuple(_key_lines(params.get("userssh")) + _key_lines(params.get("publicKeys"))),
    )


def task_aliases(spec: NormalizedSpec, roles: tuple[str, ...] = ()) -> list[str]:
    """`<taskrole>-<index>` of every task (of the given roles), the names `ssh` knows them by."""
    return [
        f"{role}-{index}"
        for role, role_spec in (spec.get("taskRoles") or {}).items()
        if not roles or role in roles
        for index in range(int(role_spec.get("instances", 1)))
    ]


SSH_PORT_LABEL = "ssh"


def ports_with_ssh(ports: dict[str, int] | None) -> dict[str, int]:
    """A task's port requests plus one `ssh` port (unless the config asks for one already): the
    executor publishes it on the node and the task's sshd listens there, so users outside the
    node's Docker network can connect."""
    requested = dict(ports or {})
    requested.setdefault(SSH_PORT_LABEL, 1)
    return requested
