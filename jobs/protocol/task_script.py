"""task_script(spec, role, secrets): the bash script one task of a role runs.

Order: taskStarts hooks (the role's cmd-plugin prerequisites in order, `require`d ones first, then
cmd runtime plugins from extras), the active deployment's preCommands, the role's commands; when
they succeed: postCommands, then taskSucceeds hooks in reverse order. A hook runs in a subshell
with `set -e`; with failurePolicy `fail` (the default) its failure ends the task with its exit code.
The commands, preCommands and postCommands run in the task's own shell, like one script.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from jobs.protocol.v2 import RUNTIME_PLUGINS

CMD_PLUGINS = frozenset({"com.microsoft.pai.runtimeplugin.cmd", "cmd"})
_SECRET = re.compile(r"<%\s*\$secrets\.([^\s.\[\]%]+)\s*%>")


@dataclass(frozen=True)
class Hook:
    label: str
    starts: list[str]
    succeeds: list[str]
    ignore_failure: bool


def task_script(spec: dict[str, Any], role: str, secrets: dict[str, str]) -> str:
    role_spec = spec["taskRoles"][role]
    hooks = _hooks(spec, role)
    deployment = _deployment(spec, role)
    lines = [
        "#!/bin/bash",
        f"# Task role {role} of job {spec['name']}: written by PAI Portal from the job config.",
        "pai_hook_failed() {",
        '  echo "PAI: $1 failed with exit code $2" >&2',
        '  exit "$2"',
        "}",
    ]
    for hook in hooks:
        lines += _hook_block("taskStarts", hook, hook.starts)
    if deployment and deployment.get("preCommands"):
        lines += [f"# deployment {spec['defaults']['deployment']}: preCommands", *deployment["preCommands"]]
    lines += [
        "# commands",
        *role_spec["commands"],
        "pai_status=$?",
        'if [ "$pai_status" -ne 0 ]; then exit "$pai_status"; fi',
    ]
    if deployment and deployment.get("postCommands"):
        lines += [
            f"# deployment {spec['defaults']['deployment']}: postCommands",
            *deployment["postCommands"],
            "pai_status=$?",
            'if [ "$pai_status" -ne 0 ]; then exit "$pai_status"; fi',
        ]
    for hook in reversed(hooks):
        lines += _hook_block("taskSucceeds", hook, hook.succeeds)
    lines.append("exit 0")
    return render_secrets("\n".join(lines) + "\n", secrets)


def render_secrets(text: str, secrets: dict[str, str]) -> str:
    """Put secret values in place of their references (only ever at launch)."""
    if "<%" not in text:
        return text
    return _SECRET.sub(lambda m: str(secrets[m.group(1)]) if m.group(1) in secrets else m.group(), text)


def _hook_block(event: str, hook: Hook, commands: list[str]) -> list[str]:
    if not commands:
        return []
    # Not `( ... ) || handler`: bash ignores `set -e` inside a subshell whose status is tested.
    on_failure = (
        f'echo "PAI: {event} hook {hook.label} failed with exit code $pai_status (ignored)" >&2'
        if hook.ignore_failure
        else f'pai_hook_failed "{event} hook {hook.label}" "$pai_status"'
    )
    return [
        f"# {event}: {hook.label}",
        "(",
        "set -e",
        *commands,
        ")",
        "pai_status=$?",
        f'if [ "$pai_status" -ne 0 ]; then {on_failure}; fi',
    ]


def _hooks(spec: dict[str, Any], role: str) -> list[Hook]:
    by_name: dict[str, dict[str, Any]] = {}
    for prerequisite in spec.get("prerequisites") or []:
        if (
            prerequisite.get("callbacks")
            and prerequisite.get("plugin", "com.microsoft.pai.runtimeplugin.cmd") in CMD_PLUGINS
        ):
            by_name.setdefault(prerequisite["name"], prerequisite)
    requires = {p["name"]: p.get("require") or [] for p in spec.get("prerequisites") or []}
    hooks: list[Hook] = []
    for name in _with_requirements(spec["taskRoles"][role].get("prerequisites") or [], requires):
        if name in by_name:
            prerequisite = by_name[name]
            hooks.append(_hook(f"prerequisite {name}", prerequisite["callbacks"], prerequisite.get("failurePolicy")))
    for i, plugin in enumerate((spec.get("extras") or {}).get(RUNTIME_PLUGINS) or []):
        roles = plugin.get("taskroles")
        if plugin.get("plugin") in CMD_PLUGINS and (not roles or role in roles):
            callbacks = (plugin.get("parameters") or {}).get("callbacks") or []
            hooks.append(_hook(f"cmd plugin #{i}", callbacks, plugin.get("failurePolicy")))
    return hooks


def _hook(label: str, callbacks: list[dict[str, Any]], failure_policy: str | None) -> Hook:
    def commands(event: str) -> list[str]:
        return [c for callback in callbacks if callback.get("event") == event for c in callback.get("commands") or []]

    return Hook(label, commands("taskStarts"), commands("taskSucceeds"), failure_policy == "ignore")


def _with_requirements(names: list[str], requires: dict[str, list[str]]) -> list[str]:
    """Depth first, required prerequisites before those that need them, each once."""
    ordered: list[str] = []
    visiting: set[str] = set()

    def visit(name: str) -> None:
        if name in ordered or name in visiting:
            return
        visiting.add(name)
        for required in requires.get(name, []):
            visit(required)
        ordered.append(name)

    for name in names:
        visit(name)
    return ordered


def _deployment(spec: dict[str, Any], role: str) -> dict[str, Any] | None:
    chosen = (spec.get("defaults") or {}).get("deployment")
    for deployment in spec.get("deployments") or []:
        if deployment.get("name") == chosen:
            return (deployment.get("taskRoles") or {}).get(role)  # type: ignore[no-any-return]
    return None
