"""task_script: hooks, deployment commands and the role's commands in one bash script, run for real."""

from __future__ import annotations

import shutil
import subprocess
from typing import Any

import pytest

from jobs.protocol import load, task_script
from tests.protocol.conftest import V1_CONFIG, V2_CONFIG, as_v1_text, as_v2_text, changed, read_example

W = "taskRoles.worker"
CMD = "com.microsoft.pai.runtimeplugin.cmd"


def _callbacks(name: str) -> list[dict[str, Any]]:
    return [
        {"event": "taskStarts", "commands": [f"echo start {name}"]},
        {"event": "taskSucceeds", "commands": [f"echo done {name}"]},
    ]


HOOKED = {
    "prerequisites.1": {
        "name": "code",
        "type": "script",
        "plugin": CMD,
        "callbacks": _callbacks("code"),
        "require": ["ds"],
    },
    "prerequisites.2": {"name": "ds", "type": "data", "plugin": CMD, "callbacks": _callbacks("ds")},
    f"{W}.prerequisites": ["code"],
    f"{W}.commands": ["echo commands <% $parameters.lr %>", "echo token <% $secrets.token %>"],
    "deployments.0.taskRoles.worker": {"preCommands": ["echo pre"], "postCommands": ["echo post"]},
    "extras": {
        "com.microsoft.pai.runtimeplugin": [{"plugin": "cmd", "parameters": {"callbacks": _callbacks("plugin")}}]
    },
}


def _script(changes: dict[str, Any], secrets: dict[str, str] | None = None) -> str:
    config = load(as_v2_text(changed(V2_CONFIG, changes)))
    return task_script(config.spec, "worker", config.secrets if secrets is None else secrets)


def _run(script: str) -> subprocess.CompletedProcess[str]:
    bash = shutil.which("bash")
    if bash is None:
        pytest.skip("bash not available")
    return subprocess.run([bash, "-c", script], capture_output=True, text=True, timeout=10, check=False)


def test_it_runs_hooks_deployment_and_commands_in_order() -> None:
    result = _run(_script(HOOKED))
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == [
        "start ds",
        "start code",
        "start plugin",
        "pre",
        "commands 0.1",
        "token s3cret",
        "post",
        "done plugin",
        "done code",
        "done ds",
    ]


def test_it_renders_secrets_only_in_the_script() -> None:
    spec = load(as_v2_text(changed(V2_CONFIG, HOOKED))).spec
    assert "s3cret" not in str(spec)
    assert "echo token s3cret" in task_script(spec, "worker", {"token": "s3cret"})


def test_it_keeps_a_secret_reference_when_the_value_is_missing() -> None:
    assert "echo token <% $secrets.token %>" in _script(HOOKED, secrets={})


def test_a_failing_command_ends_the_task_with_its_code_before_post_hooks() -> None:
    result = _run(_script({**HOOKED, f"{W}.commands": ["echo run", "exit 3"]}))
    assert result.returncode == 3
    assert "post" not in result.stdout
    assert "done code" not in result.stdout


def test_a_failing_start_hook_stops_the_task() -> None:
    failing = [{"event": "taskStarts", "commands": ["false", "echo never"]}]
    result = _run(_script({**HOOKED, "prerequisites.2.callbacks": failing}))
    assert result.returncode == 1
    assert "never" not in result.stdout
    assert "commands" not in result.stdout
    assert "taskStarts hook prerequisite ds failed with exit code 1" in result.stderr


def test_an_ignored_hook_failure_lets_the_task_go_on() -> None:
    failing = [{"event": "taskStarts", "commands": ["exit 4"]}]
    result = _run(_script({**HOOKED, "prerequisites.2.callbacks": failing, "prerequisites.2.failurePolicy": "ignore"}))
    assert result.returncode == 0
    assert "commands 0.1" in result.stdout


def test_commands_share_one_shell() -> None:
    result = _run(_script({f"{W}.commands": ["cd /", "export X=1", "echo $PWD $X"]}))
    assert result.stdout.splitlines() == ["pre", "/ 1"]


def test_plugin_hooks_apply_only_to_their_task_roles() -> None:
    plugin = {"plugin": "cmd", "taskroles": ["worker"], "parameters": {"callbacks": _callbacks("p")}}
    doc = changed(
        V2_CONFIG,
        {"taskRoles.ps": V2_CONFIG["taskRoles"]["worker"], "extras": {"com.microsoft.pai.runtimeplugin": [plugin]}},
    )
    spec = load(as_v2_text(doc)).spec
    assert "echo start p" in task_script(spec, "worker", {})
    assert "echo start p" not in task_script(spec, "ps", {})


def test_a_v1_role_runs_its_command(v1_text: str) -> None:
    spec = load(v1_text).spec
    result = _run(task_script(spec, "worker", {}))
    assert (result.returncode, result.stdout) == (0, "hello\n")


def test_the_seed_003_prerequisites_run_in_the_listed_order() -> None:
    spec = load(read_example("seeds/003_test_prerequisites.yaml")).spec
    script = task_script(spec, "taskrole", {})
    assert script.index("apt install -y  git") < script.index("mkdir -p /dataset/covid-19") < script.index("ls -la")


def test_a_v1_job_keeps_its_exit_code() -> None:
    spec = load(as_v1_text(changed(V1_CONFIG, {"taskRoles.0.command": "exit 7"}))).spec
    assert _run(task_script(spec, "worker", {})).returncode == 7
