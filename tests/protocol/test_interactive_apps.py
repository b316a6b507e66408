"""The app plugins (jupyter, tensorboard, http): what a config declares, the port Jupyter gets,
the command that starts it, and the refusals that name their field."""

from __future__ import annotations

from typing import Any

import pytest

from jobs.protocol import load, task_script
from jobs.protocol.errors import english
from jobs.protocol.honoured import unsupported
from jobs.protocol.interactive import AppSpec, declared_apps
from jobs.protocol.spec import NormalizedSpec
from tests.protocol.conftest import V2_CONFIG, as_v2_text, changed

RUNTIME = "com.microsoft.pai.runtimeplugin"
HERE = f"extras.{RUNTIME}[0]"


def _spec(*plugins: dict[str, Any], **changes: Any) -> NormalizedSpec:
    return load(as_v2_text(changed(V2_CONFIG, {"extras": {RUNTIME: list(plugins)}, **changes}))).spec


def test_the_jupyter_plugin_gets_a_port_on_its_task_role() -> None:
    spec = _spec({"plugin": "jupyter"})
    assert spec["taskRoles"]["worker"]["resourcePerInstance"]["ports"]["jupyter"] == 1


def test_jupyter_starts_in_the_first_task_only_on_its_port_without_a_browser() -> None:
    script = task_script(_spec({"plugin": "jupyter"}), "worker", {})
    assert 'if [ "$PAI_CURRENT_TASK_ROLE_CURRENT_TASK_INDEX" = 0 ]' in script
    assert "jupyter lab --ServerApp.allow_origin='*'" in script
    assert "--port=$PAI_CONTAINER_HOST_jupyter_PORT_LIST --no-browser" in script


def test_jupyter_without_jupyter_in_the_image_fails_saying_which_image_has_it() -> None:
    script = task_script(_spec({"plugin": "jupyter"}), "worker", {})
    assert "pai-portal/notebook:latest" in script and "exit 1" in script


def test_the_notebook_interface_is_asked_for_by_name() -> None:
    script = task_script(_spec({"plugin": "jupyter", "parameters": {"interface": "notebook"}}), "worker", {})
    assert "if false; then" in script and "jupyter notebook --NotebookApp.allow_origin='*'" in script


def test_it_declares_each_app_with_its_role_port_idle_time_and_users() -> None:
    spec = _spec(
        {"plugin": "jupyter", "parameters": {"idleMinutes": 30, "users": ["bob"]}},
        {"plugin": "tensorboard", "parameters": {"logdir": {"a": "/x"}}},
        {"plugin": "http", "parameters": {"port": "web"}},
        **{"taskRoles.worker.resourcePerInstance.ports": {"web": 1}},
    )
    assert declared_apps(spec) == [
        AppSpec("jupyter", "worker", "jupyter", 30.0, ("bob",)),
        AppSpec("tensorboard", "worker", "tensorboard", None, ()),
        AppSpec("http", "worker", "web", None, ()),
    ]


def test_an_app_runs_in_the_first_role_it_names() -> None:
    second = {**V2_CONFIG["taskRoles"]["worker"]}
    spec = _spec({"plugin": "jupyter", "taskroles": ["ps"]}, **{"taskRoles.ps": second})
    assert declared_apps(spec)[0].role == "ps"
    assert "jupyter" not in task_script(spec, "worker", {})


@pytest.mark.parametrize(
    ("plugin", "field", "says"),
    [
        ({"plugin": "jupyter", "parameters": {"idleMinutes": 0}}, "parameters.idleMinutes", "above 0"),
        ({"plugin": "jupyter", "parameters": {"idleMinutes": "soon"}}, "parameters.idleMinutes", "minutes"),
        ({"plugin": "jupyter", "parameters": {"users": "bob"}}, "parameters.users", "list of user names"),
        ({"plugin": "jupyter", "parameters": {"interface": "vscode"}}, "parameters.interface", "lab or notebook"),
        ({"plugin": "http", "parameters": {}}, "parameters.port", "name one of the task role's ports"),
        ({"plugin": "http", "parameters": {"port": "web"}}, "parameters.port", "declares no port 'web'"),
        ({"plugin": "http", "parameters": {"port": "ssh"}}, "parameters.port", "declares no port"),
    ],
)
def test_it_refuses_bad_app_parameters_naming_the_field(plugin: dict[str, Any], field: str, says: str) -> None:
    errors = unsupported(_spec(plugin))
    assert any(path == f"{HERE}.{field}" and says in message.text for path, message in errors), errors


def test_an_http_app_may_not_be_the_ssh_port() -> None:
    spec = _spec(
        {"plugin": "http", "parameters": {"port": "ssh"}}, **{"taskRoles.worker.resourcePerInstance.ports": {"ssh": 1}}
    )
    assert english(unsupported(spec)) == [(f"{HERE}.parameters.port", "sshd speaks no HTTP: name another port")]
