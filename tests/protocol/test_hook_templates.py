"""Templates in runtime-plugin commands and prerequisite callbacks are expanded like the task role's
commands, with the role's `$script`/`$data`/`$output` (as openpai-runtime's `replace_ref` does;
its own test jobs `cmd_test_job`, `cmd_with_callbacks_test_job`, `cmd_with_prerequisites_test_job`
use `<% $data.uri[0] %>` and `<% $data.name %>` there)."""

from __future__ import annotations

from typing import Any

import pytest
import yaml

from jobs.protocol import JobConfigError, export, load, task_script
from tests.protocol.conftest import V2_CONFIG, as_v2_text, changed

W = "taskRoles.worker"
RUNTIME = "com.microsoft.pai.runtimeplugin"
DOWNLOAD = "wget -qO- <% $data.uri[0] %> | tar xz && mv batches data_<% $data.name %>"
ROLE_WITH_DATA = {f"{W}.data": "ds"}


def _load(changes: dict[str, Any]):
    return load(as_v2_text(changed(V2_CONFIG, changes)))


def _script(changes: dict[str, Any], role: str = "worker") -> str:
    config = _load(changes)
    return task_script(config.spec, role, config.secrets)


def _plugins(plugins: list[dict[str, Any]]) -> dict[str, Any]:
    return {"extras": {RUNTIME: plugins}}


def _cmd_plugin(**parameters: Any) -> list[dict[str, Any]]:
    return [{"plugin": "cmd", "taskroles": ["worker"], "parameters": parameters}]


def test_it_expands_data_in_a_cmd_plugins_pre_commands() -> None:
    script = _script({**ROLE_WITH_DATA, **_plugins(_cmd_plugin(preCommands=[DOWNLOAD], postCommands=["echo post"]))})
    assert "wget -qO- hdfs://host/ds | tar xz && mv batches data_ds" in script
    assert script.index("data_ds") < script.index("train --lr 0.1") < script.index("echo post")


def test_it_expands_data_in_a_cmd_plugins_callbacks() -> None:
    callbacks = [{"event": "taskStarts", "commands": [DOWNLOAD]}]
    assert "wget -qO- hdfs://host/ds" in _script({**ROLE_WITH_DATA, **_plugins(_cmd_plugin(callbacks=callbacks))})


def test_it_expands_a_prerequisites_callbacks_with_the_roles_data() -> None:
    loader = {
        "name": "load_data",
        "type": "script",
        "plugin": "com.microsoft.pai.runtimeplugin.cmd",
        "callbacks": [{"event": "taskStarts", "commands": [DOWNLOAD]}],
    }
    script = _script({"prerequisites.3": loader, f"{W}.prerequisites": ["load_data"], **ROLE_WITH_DATA})
    assert "wget -qO- hdfs://host/ds" in script


def test_it_expands_output_and_script_in_plugin_commands() -> None:
    changes = {
        "prerequisites.3": {"name": "out", "type": "output", "uri": "hdfs://host/out"},
        f"{W}.output": "out",
        f"{W}.script": "code",
        **_plugins(_cmd_plugin(postCommands=["upload <% $output.uri %> from <% $script.name %>"])),
    }
    assert "upload hdfs://host/out from code" in _script(changes)


def test_each_task_role_reads_its_own_data() -> None:
    changes = {
        "prerequisites.3": {"name": "other", "type": "data", "uri": ["hdfs://host/other"]},
        **ROLE_WITH_DATA,
        "taskRoles.ps": {**V2_CONFIG["taskRoles"]["worker"], "data": "other"},
        **_plugins([{"plugin": "cmd", "parameters": {"preCommands": ["get <% $data.uri[0] %>"]}}]),
    }
    assert "get hdfs://host/ds" in _script(changes, "worker")
    assert "get hdfs://host/other" in _script(changes, "ps")


def test_a_prerequisites_own_callbacks_fall_back_to_itself() -> None:
    callbacks = [{"event": "taskStarts", "commands": ["fetch <% $data.uri[0] %>"]}]
    own = {"name": "ds", "type": "data", "uri": ["hdfs://host/ds"], "plugin": "cmd", "callbacks": callbacks}
    assert "fetch hdfs://host/ds" in _script({"prerequisites.2": own, f"{W}.prerequisites": ["ds"]})


def test_it_still_expands_parameters_in_plugins_when_loading() -> None:
    spec = _load(
        {**ROLE_WITH_DATA, **_plugins(_cmd_plugin(preCommands=["echo <% $parameters.lr %> <% $data.name %>"]))}
    ).spec
    assert spec["extras"]["com.microsoft.pai.runtimeplugin"][0]["parameters"]["preCommands"] == [
        "echo 0.1 <% $data.name %>"
    ]


def test_the_spec_keeps_role_references_so_an_export_loads_again_unchanged() -> None:
    spec = _load({**ROLE_WITH_DATA, **_plugins(_cmd_plugin(preCommands=[DOWNLOAD]))}).spec
    assert load(export(spec)).spec == spec


def test_it_names_the_field_and_role_when_a_role_has_no_data_prerequisite() -> None:
    with pytest.raises(JobConfigError) as caught:
        _load({**_plugins(_cmd_plugin(preCommands=["echo ok", DOWNLOAD]))})
    assert caught.value.english == [
        (
            "extras.com.microsoft.pai.runtimeplugin[0].parameters.preCommands[1]",
            "$data is used but the task role names no data prerequisite (in task role 'worker')",
        )
    ]


def test_it_reports_an_undefined_field_of_a_prerequisite() -> None:
    callbacks = [{"event": "taskStarts", "commands": ["<% $data.nope %>"]}]
    with pytest.raises(JobConfigError) as caught:
        _load({**ROLE_WITH_DATA, **_plugins(_cmd_plugin(callbacks=callbacks))})
    ((field, message),) = caught.value.english
    assert field == "extras.com.microsoft.pai.runtimeplugin[0].parameters.callbacks[0].commands[0]"
    assert "undefined data field 'nope'" in message


def test_it_does_not_check_hooks_of_roles_they_do_not_run_in() -> None:
    plugin = [{"plugin": "cmd", "taskroles": ["ps"], "parameters": {"preCommands": ["<% $data.uri[0] %>"]}}]
    changes = {"taskRoles.ps": {**V2_CONFIG["taskRoles"]["worker"], "data": "ds"}, **_plugins(plugin)}
    assert "<% $data" not in _script(changes, "ps")
    assert _load(changes).spec


def test_a_seed_style_yaml_with_plugin_templates_loads() -> None:
    text = yaml.safe_dump(changed(V2_CONFIG, {**ROLE_WITH_DATA, **_plugins(_cmd_plugin(preCommands=[DOWNLOAD]))}))
    assert load(text).spec["taskRoles"]["worker"]["data"] == "ds"
