"""task_script(spec, role, secrets): the bash script one task of a role runs.

Order: the job's hostfiles are written (jobs.protocol.launcher_env); taskStarts hooks
(jobs.protocol.hooks: the role's cmd-plugin prerequisites in order,
`require`d ones first, then the cmd and tensorboard runtime plugins from extras, their
`$script`/`$data`/`$output` references expanded for this role), the active deployment's
preCommands, the role's commands; when they succeed: postCommands, then taskSucceeds hooks in
reverse order. A hook runs in a subshell with `set -e`; with failurePolicy `fail` (the default)
its failure ends the task with its exit code. The commands, preCommands and postCommands run in
the task's own shell, like one script.
"""

from __future__ import annotations

import re

from jobs.protocol.hooks import Command, Hook, expanded, role_hooks, role_scope
from jobs.protocol.launcher_env import hostfile_commands
from jobs.protocol.spec import NormalizedSpec, RoleHooks

_SECRET = re.compile(r"<%\s*\$secrets\.([^\s.\[\]%]+)\s*%>")


def task_script(spec: NormalizedSpec, role: str, secrets: dict[str, str]) -> str:
    role_spec = spec["taskRoles"][role]
    # References were checked at load; whatever could not resolve stays as written.
    hooks = [expanded(hook, role_scope(spec, role, hook.owner), []) for hook in role_hooks(spec, role)]
    deployment = _deployment(spec, role)
    lines = [
        "#!/bin/bash",
        f"# Task role {role} of job {spec['name']}: written by PAI Portal from the job config.",
        "pai_hook_failed() {",
        '  echo "PAI: $1 failed with exit code $2" >&2',
        '  exit "$2"',
        "}",
        "# the job's hostfiles (PAI_MPI_HOSTFILE, PAI_MPICH_HOSTFILE, PAI_DEEPSPEED_HOSTFILE)",
        *hostfile_commands(spec),
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


def _hook_block(event: str, hook: Hook, commands: list[Command]) -> list[str]:
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
        *(command.text for command in commands),
        ")",
        "pai_status=$?",
        f'if [ "$pai_status" -ne 0 ]; then {on_failure}; fi',
    ]


def _deployment(spec: NormalizedSpec, role: str) -> RoleHooks | None:
    chosen = (spec.get("defaults") or {}).get("deployment")
    for deployment in spec.get("deployments") or []:
        if deployment.get("name") == chosen:
            return (deployment.get("taskRoles") or {}).get(role)
    return None
