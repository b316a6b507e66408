"""What runs around a task role's commands: taskStarts / taskSucceeds hooks from cmd-plugin
prerequisites and from the `cmd` and `tensorboard` runtime plugins.

As in OpenPAI's runtime (openpai-runtime `init.d/initializer.py`, `replace_ref`), a hook's
`<% $script %>`, `<% $data %>` and `<% $output %>` name the prerequisites of the task role the hook
runs in. A prerequisite's own callbacks fall back to the prerequisite itself when the role names
none of its kind (a data prerequisite's callback can read its own `<% $data.uri[0] %>`). So these
references stay in the spec as written and are expanded per task role: checked at load, written
into the task's script at launch.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass
from typing import Any

from catalogue import Message
from jobs.protocol.errors import FieldError, unique
from jobs.protocol.spec import RUNTIME_PLUGINS, Callback, NormalizedSpec, Prerequisite
from jobs.protocol.templating import Scope, expand

CMD_PLUGINS = frozenset({"com.microsoft.pai.runtimeplugin.cmd", "cmd"})
TENSORBOARD_PLUGIN = "tensorboard"
TENSORBOARD_PORT_LABEL = "tensorboard"
JUPYTER_PLUGIN = "jupyter"
JUPYTER_PORT_LABEL = "jupyter"
JUPYTER_INTERFACES = ("lab", "notebook")
ROLE_KINDS = ("script", "data", "output")


@dataclass(frozen=True)
class Command:
    path: str  # where the command is written in the config, for errors
    text: str


@dataclass(frozen=True)
class Hook:
    label: str
    starts: list[Command]
    succeeds: list[Command]
    ignore_failure: bool
    owner: Prerequisite | None = None  # the prerequisite whose callbacks these are


def runtime_plugins(spec: NormalizedSpec) -> list[dict[str, Any]]:
    plugins = (spec.get("extras") or {}).get(RUNTIME_PLUGINS) or []
    return [plugins] if isinstance(plugins, dict) else list(plugins)


def tensorboard_role(spec: NormalizedSpec) -> str | None:
    """OpenPAI runs TensorBoard in the first task of the first task role, when the job asks for it."""
    if not any(plugin.get("plugin") == TENSORBOARD_PLUGIN for plugin in runtime_plugins(spec)):
        return None
    return next(iter(spec["taskRoles"]), None)


def tensorboard_logdirs(spec: NormalizedSpec) -> dict[str, str]:
    """The folders the first `tensorboard` plugin names, by run name (plugin_logdirs)."""
    plugin = next((p for p in runtime_plugins(spec) if p.get("plugin") == TENSORBOARD_PLUGIN), None)
    return plugin_logdirs(plugin) if plugin else {}


def plugin_logdirs(plugin: dict[str, Any]) -> dict[str, str]:
    """A `tensorboard` plugin's `parameters.logdir` as written: OpenPAI's `{name: path}`, or one
    path as text (named '')."""
    logdir = (plugin.get("parameters") or {}).get("logdir") or {}
    if isinstance(logdir, dict):
        return {str(name): str(path) for name, path in logdir.items() if path}
    return {"": str(logdir)}


def plugin_role(spec: NormalizedSpec, plugin: dict[str, Any]) -> str | None:
    """The task role whose first task runs a single-instance plugin (Jupyter, an `http` app): the
    first of its `taskroles`, else the job's first task role."""
    named = plugin.get("taskroles")
    if isinstance(named, list) and named and named[0] in spec["taskRoles"]:
        return str(named[0])
    return next(iter(spec["taskRoles"]), None)


def role_hooks(spec: NormalizedSpec, role: str) -> list[Hook]:
    """The role's hooks in the order they start: its cmd prerequisites (`require`d ones first),
    then the runtime plugins that apply to it."""
    prerequisites = spec.get("prerequisites") or []
    paths = {p["name"]: f"prerequisites[{i}]" for i, p in reversed(list(enumerate(prerequisites)))}
    by_name = {p["name"]: p for p in reversed(prerequisites)}
    requires = {p["name"]: p.get("require") or [] for p in prerequisites}
    hooks: list[Hook] = []
    for name in _with_requirements(spec["taskRoles"][role].get("prerequisites") or [], requires):
        prerequisite = by_name.get(name)
        if prerequisite and prerequisite.get("callbacks") and _is_cmd(prerequisite.get("plugin", "cmd")):
            commands = _callback_commands(prerequisite["callbacks"], f"{paths[name]}.callbacks")
            policy = prerequisite.get("failurePolicy")
            hooks.append(Hook(f"prerequisite {name}", *commands, policy == "ignore", prerequisite))
    for i, plugin in enumerate(runtime_plugins(spec)):
        roles = plugin.get("taskroles")
        if roles and role not in roles:
            continue
        here = f"extras.{RUNTIME_PLUGINS}[{i}]"
        ignore = plugin.get("failurePolicy") == "ignore"
        if _is_cmd(plugin.get("plugin")):
            hooks.append(Hook(f"cmd plugin #{i}", *_cmd_plugin_commands(plugin, here), ignore))
        elif plugin.get("plugin") == TENSORBOARD_PLUGIN and role == tensorboard_role(spec):
            hooks.append(Hook(f"tensorboard plugin #{i}", [_tensorboard_command(plugin, here)], [], ignore))
        elif plugin.get("plugin") == JUPYTER_PLUGIN and role == plugin_role(spec, plugin):
            hooks.append(Hook(f"jupyter plugin #{i}", [_jupyter_command(plugin, here)], [], ignore))
    return hooks


def role_scope(spec: NormalizedSpec, role: str, owner: Prerequisite | None = None) -> Scope:
    """What a hook running in `role` may reference (spec parameters are expanded already)."""
    role_spec = spec["taskRoles"][role]
    found: dict[str, Prerequisite | None] = {}
    for kind in ROLE_KINDS:
        named = role_spec.get(kind)
        match = next(
            (p for p in spec.get("prerequisites") or [] if p.get("type") == kind and p.get("name") == named), None
        )
        found[kind] = match or (owner if owner and owner.get("type") == kind else None)
    return Scope(spec.get("parameters") or {}, frozenset(spec.get("secrets") or {}), found, in_task_role=True)


def expanded(hook: Hook, scope: Scope, errors: list[FieldError]) -> Hook:
    def each(commands: list[Command]) -> list[Command]:
        return [Command(c.path, expand(c.text, scope, c.path, errors)) for c in commands]

    return Hook(hook.label, each(hook.starts), each(hook.succeeds), hook.ignore_failure, hook.owner)


def check_role_references(spec: NormalizedSpec) -> list[FieldError]:
    """Every hook's references, checked in every role it runs in; each problem once."""
    errors: list[FieldError] = []
    for role in spec["taskRoles"]:
        found: list[FieldError] = []
        for hook in role_hooks(spec, role):
            expanded(hook, role_scope(spec, role, hook.owner), found)
        errors.extend((path, Message.of("config.ref.in_role", message=message, role=role)) for path, message in found)
    return unique(errors)


def _is_cmd(plugin: Any) -> bool:
    return plugin in CMD_PLUGINS


def _callback_commands(callbacks: list[Callback], here: str) -> tuple[list[Command], list[Command]]:
    def of(event: str) -> list[Command]:
        return [
            Command(f"{here}[{i}].commands[{j}]", text)
            for i, callback in enumerate(callbacks)
            if callback.get("event") == event
            for j, text in enumerate(callback.get("commands") or [])
        ]

    return of("taskStarts"), of("taskSucceeds")


def _cmd_plugin_commands(plugin: dict[str, Any], here: str) -> tuple[list[Command], list[Command]]:
    """OpenPAI's cmd plugin takes `callbacks`, or `preCommands` / `postCommands`."""
    parameters = plugin.get("parameters") or {}
    if parameters.get("callbacks"):
        return _callback_commands(parameters["callbacks"], f"{here}.parameters.callbacks")

    def of(key: str) -> list[Command]:
        return [Command(f"{here}.parameters.{key}[{j}]", text) for j, text in enumerate(parameters.get(key) or [])]

    return of("preCommands"), of("postCommands")


def _tensorboard_command(plugin: dict[str, Any], here: str) -> Command:
    """TensorBoard in the background on the task's allocated `tensorboard` port (first task only).
    An image without it fails the task and says so: the portal installs nothing at run time."""
    logdirs = plugin_logdirs(plugin)
    if len(logdirs) == 1:
        logdir = "--logdir=" + shell_word(next(iter(logdirs.values())))
    else:
        logdir = "--logdir_spec=" + shell_word(",".join(f"{name}:{path}" for name, path in logdirs.items()))
    port = f"$PAI_CONTAINER_HOST_{TENSORBOARD_PORT_LABEL}_PORT_LIST"
    text = "\n".join(
        [
            'if [ "$PAI_CURRENT_TASK_ROLE_CURRENT_TASK_INDEX" = 0 ]; then',
            "  if ! command -v tensorboard >/dev/null 2>&1; then",
            "    echo \"PAI: the tensorboard runtime plugin needs the tensorboard command in the job's image,"
            ' which has none: install it in the image (pip install tensorboard)." >&2',
            "    exit 1",
            "  fi",
            f"  tensorboard {logdir} --port={port} --bind_all &",
            f'  echo "PAI: TensorBoard starts on port {port}"',
            "fi",
        ]
    )
    return Command(f"{here}.parameters.logdir", text)


def _jupyter_command(plugin: dict[str, Any], here: str) -> Command:
    """Jupyter in the background on the task's allocated `jupyter` port (first task only), reached
    through the portal's proxy (web/app_proxy): it accepts only the token the portal gives the task
    as JUPYTER_TOKEN (a secret variable) and the proxy adds to each request, so the port opened
    directly asks for it. JupyterLab where the image has it, else the classic Notebook."""
    parameters = plugin.get("parameters") or {}
    interface = parameters.get("interface") or "lab"
    folder = shlex.quote(str(parameters["notebookDir"])) if parameters.get("notebookDir") else '"$PWD"'
    port = f"$PAI_CONTAINER_HOST_{JUPYTER_PORT_LABEL}_PORT_LIST"
    common = f"--ip=0.0.0.0 --port={port} --no-browser --allow-root --notebook-dir={folder}"
    # Origins are the proxy's to check (it refuses a foreign Origin): the server sees the proxy's.
    lab = f"jupyter lab --ServerApp.allow_origin='*' --ServerApp.trust_xheaders=True {common} &"
    notebook = f"jupyter notebook --NotebookApp.allow_origin='*' --NotebookApp.trust_xheaders=True {common} &"
    text = "\n".join(
        [
            'if [ "$PAI_CURRENT_TASK_ROLE_CURRENT_TASK_INDEX" = 0 ]; then',
            "  if ! command -v jupyter >/dev/null 2>&1; then",
            "    echo \"PAI: the jupyter runtime plugin needs Jupyter in the job's image, which has none: use"
            ' pai-portal/notebook:latest (make image-notebook) or install it (pip install jupyterlab)." >&2',
            "    exit 1",
            "  fi",
            f"  if {'command -v jupyter-lab >/dev/null 2>&1' if interface == 'lab' else 'false'}; then",
            f"    {lab}",
            "  else",
            f"    {notebook}",
            "  fi",
            f'  echo "PAI: Jupyter starts on port {port}; open it from the job page"',
            "fi",
        ]
    )
    return Command(f"{here}.parameters", text)


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


_VARIABLE = re.compile(r"\$(?:[A-Za-z_][A-Za-z0-9_]*|\{[A-Za-z_][A-Za-z0-9_]*\})")


def shell_word(text: str) -> str:
    """`text` as one shell word whose `$NAME` / `${NAME}` are the task's variables (a logdir of
    `$PAI_WORK_DIR/tb`, as OpenPAI's runtime writes it unquoted) and nothing else is shell: no
    command substitution, no glob, no split."""
    if "$" not in text:
        return shlex.quote(text)
    out, start = ['"'], 0
    for match in _VARIABLE.finditer(text):
        out += [_in_double_quotes(text[start : match.start()]), match.group()]
        start = match.end()
    out += [_in_double_quotes(text[start:]), '"']
    return "".join(out)


def _in_double_quotes(text: str) -> str:
    return re.sub(r'([$`"\\])', r"\\\1", text)
