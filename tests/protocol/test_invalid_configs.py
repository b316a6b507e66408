# ruff: noqa: E501 - one table row per line reads better than wrapped rows
"""Every rule broken once: the error names the exact field path (table-driven)."""

from __future__ import annotations

import time
from typing import Any

import pytest

from jobs.protocol import JobConfigError, load
from tests.protocol.conftest import DELETE, V1_CONFIG, V2_CONFIG, as_v1_text, as_v2_text, changed, read_example

W1 = "taskRoles.0"
W2 = "taskRoles.worker"
RES = f"{W2}.resourcePerInstance"

# (case id, changes to the valid v1 config, field path, message fragment)
V1_CASES: list[tuple[str, dict[str, Any], str, str]] = [
    ("job name missing", {"jobName": DELETE}, "jobName", "is required"),
    ("job name with a space", {"jobName": "my job"}, "jobName", "may contain only letters, digits and - . _"),
    ("job name not a string", {"jobName": 42}, "jobName", "must be a string"),
    ("image missing", {"image": DELETE}, "image", "is required"),
    ("task roles missing", {"taskRoles": DELETE}, "taskRoles", "is required"),
    ("task roles empty", {"taskRoles": []}, "taskRoles", "must not be empty"),
    ("task role name with a dash", {f"{W1}.name": "ps-server"}, "taskRoles[0].name", "may contain only letters, digits and . _ ~"),
    ("task number 0", {f"{W1}.taskNumber": 0}, "taskRoles[0].taskNumber", "must be >= 1"),
    ("task number missing", {f"{W1}.taskNumber": DELETE}, "taskRoles[0].taskNumber", "is required"),
    ("task number a string", {f"{W1}.taskNumber": "2"}, "taskRoles[0].taskNumber", "must be an integer"),
    ("cpu 0", {f"{W1}.cpuNumber": 0}, "taskRoles[0].cpuNumber", "must be >= 1"),
    ("memory below 100", {f"{W1}.memoryMB": 99}, "taskRoles[0].memoryMB", "must be >= 100"),
    ("gpu negative", {f"{W1}.gpuNumber": -1}, "taskRoles[0].gpuNumber", "must be >= 0"),
    ("shm above memory", {f"{W1}.shmMB": 2048}, "taskRoles[0].shmMB", "must be <= memoryMB (1024)"),
    ("port label with a dash", {f"{W1}.portList.0.label": "my-port"}, "taskRoles[0].portList[0].label", "may contain only"),
    ("port beginAt missing", {f"{W1}.portList.0.beginAt": DELETE}, "taskRoles[0].portList[0].beginAt", "is required"),
    ("port beginAt too high", {f"{W1}.portList.0.beginAt": 70000}, "taskRoles[0].portList[0].beginAt", "must be <= 65535"),
    ("command empty", {f"{W1}.command": ""}, "taskRoles[0].command", "must not be empty"),
    ("command blank", {f"{W1}.command": "   "}, "taskRoles[0].command", "must not be blank"),
    ("command missing", {f"{W1}.command": DELETE}, "taskRoles[0].command", "is required"),
    ("command with v2 template syntax", {f"{W1}.command": "echo <% $parameters.x %>"}, "taskRoles[0].command", "v2 template syntax"),
    ("image with v2 template syntax", {"image": "<% $parameters.img %>"}, "image", "v2 template syntax"),
    ("retry count negative", {"retryCount": -1}, "retryCount", "must be >= 0"),
    ("min failed 0", {f"{W1}.minFailedTaskCount": 0}, "taskRoles[0].minFailedTaskCount", "must be >= 1"),
    ("min succeeded above tasks", {f"{W1}.minSucceededTaskCount": 3}, "taskRoles[0].minSucceededTaskCount", "must be <= taskNumber (2)"),
    ("kill-all negative", {"killAllOnCompletedTaskNumber": -1}, "killAllOnCompletedTaskNumber", "must be >= 0"),
    ("jobEnvs a list", {"jobEnvs": ["a=b"]}, "jobEnvs", "must be a mapping"),
    ("virtual cluster a number", {"virtualCluster": 3}, "virtualCluster", "must be a string"),
    ("memory 1e308, a whole float beyond 64 bits", {f"{W1}.memoryMB": 1e308}, "taskRoles[0].memoryMB", "must be at most 9223372036854775807 in size"),
]

V1_LIST_CASES: list[tuple[str, dict[str, Any], str, str]] = [
    ("duplicate task role", {"taskRoles.1": {**V1_CONFIG["taskRoles"][0]}}, "taskRoles[1].name", "duplicate task role name 'worker'"),
    (
        "duplicate port label",
        {f"{W1}.portList.1": {"label": "http", "beginAt": 0, "portNumber": 1}},
        "taskRoles[0].portList[1].label",
        "duplicate port label 'http'",
    ),
]

# (case id, changes to the valid v2 config, field path, message fragment)
V2_CASES: list[tuple[str, dict[str, Any], str, str]] = [
    ("protocol version 3", {"protocolVersion": 3}, "protocolVersion", 'must be one of: 2, "2"'),
    ("name missing", {"name": DELETE}, "name", "is required"),
    ("name with a dot", {"name": "job.1"}, "name", "may contain only letters, digits, _ and -"),
    ("name too long", {"name": "a" * 256}, "name", "must be at most 255 characters"),
    ("type service", {"type": "service"}, "type", 'must be one of: "job"'),
    ("unknown top-level key", {"taskRole": {}}, "taskRole", "unknown key 'taskRole' (did you mean 'taskRoles'?)"),
    ("job retry negative", {"jobRetryCount": -1}, "jobRetryCount", "must be >= 0"),
    ("task roles empty", {"taskRoles": {}}, "taskRoles", "must not be empty"),
    ("task role key starts with a digit", {"taskRoles": {"1worker": V2_CONFIG["taskRoles"]["worker"]}, "deployments": DELETE, "defaults.deployment": DELETE}, "taskRoles.1worker", "name may contain only letters, digits and _, not starting with a digit"),
    ("instances 0", {f"{W2}.instances": 0}, f"{W2}.instances", "must be >= 1"),
    ("unknown key in task role", {f"{W2}.command": "x"}, f"{W2}.command", "unknown key 'command' (did you mean 'commands'?)"),
    ("unknown key in completion", {f"{W2}.completion": {"minFailed": 1}}, f"{W2}.completion.minFailed", "unknown key 'minFailed'"),
    ("unknown key in resources", {f"{RES}.gpus": 1}, f"{RES}.gpus", "unknown key 'gpus' (did you mean 'gpu'?)"),
    ("gpu missing", {f"{RES}.gpu": DELETE}, f"{RES}.gpu", "is required"),
    ("gpu negative", {f"{RES}.gpu": -1}, f"{RES}.gpu", "must be >= 0"),
    ("cpu a string", {f"{RES}.cpu": "two"}, f"{RES}.cpu", "must be an integer"),
    ("memory below 100", {f"{RES}.memoryMB": 50}, f"{RES}.memoryMB", "must be >= 100"),
    ("port label with a dash", {f"{RES}.ports": {"my-port": 1}}, f"{RES}.ports.my-port", "name may contain only"),
    ("commands empty", {f"{W2}.commands": []}, f"{W2}.commands", "must not be empty"),
    ("commands missing", {f"{W2}.commands": DELETE}, f"{W2}.commands", "is required"),
    ("commands a string", {f"{W2}.commands": "train"}, f"{W2}.commands", "must be a list"),
    ("docker image missing", {f"{W2}.dockerImage": DELETE}, f"{W2}.dockerImage", "is required"),
    ("docker image undefined", {f"{W2}.dockerImage": "nope"}, f"{W2}.dockerImage", "no dockerimage prerequisite named 'nope'"),
    ("docker image names a script", {f"{W2}.dockerImage": "code"}, f"{W2}.dockerImage", "no dockerimage prerequisite named 'code'"),
    ("data names no data", {f"{W2}.data": "code"}, f"{W2}.data", "no data prerequisite named 'code'"),
    ("role prerequisite undefined", {f"{W2}.prerequisites": ["nope"]}, f"{W2}.prerequisites[0]", "no prerequisite named 'nope'"),
    ("docker image without uri", {"prerequisites.0.uri": DELETE}, "prerequisites[0].uri", "is required"),
    ("prerequisite of unknown type", {"prerequisites.1.type": "model"}, "prerequisites[1].type", "must be one of"),
    ("duplicate prerequisite", {"prerequisites.3": {"name": "img", "type": "dockerimage", "uri": "x"}}, "prerequisites[3].name", "duplicate dockerimage prerequisite 'img'"),
    ("require undefined", {"prerequisites.1.require": ["nope"]}, "prerequisites[1].require[0]", "no prerequisite named 'nope'"),
    ("undefined parameter", {f"{W2}.commands": ["train <% $parameters.epochs %>"]}, f"{W2}.commands[0]", "undefined parameter 'epochs'"),
    ("undefined secret", {f"{W2}.commands": ["login <% $secrets.password %>"]}, f"{W2}.commands[0]", "undefined secret 'password'"),
    ("script without a script", {f"{W2}.commands": ["cd <% $script.name %>"]}, f"{W2}.commands[0]", "names no script prerequisite"),
    ("unknown reference", {f"{W2}.commands": ["echo <% $env.HOME %>"]}, f"{W2}.commands[0]", "unknown reference $env"),
    ("undefined parameter in preCommands", {"deployments.0.taskRoles.worker.preCommands": ["<% $parameters.x %>"]}, "deployments[0].taskRoles.worker.preCommands[0]", "undefined parameter 'x'"),
    ("deployment undefined", {"defaults.deployment": "test"}, "defaults.deployment", "no deployment named 'test'"),
    ("deployment for an unknown role", {"deployments.0.taskRoles": {"ps": {"preCommands": ["x"]}}}, "deployments[0].taskRoles.ps", "no task role named 'ps'"),
    ("unknown key in defaults", {"defaults.virtualcluster": "vc1"}, "defaults.virtualcluster", "did you mean 'virtualCluster'?"),
    ("min failed 0", {f"{W2}.completion": {"minFailedInstances": 0}}, f"{W2}.completion.minFailedInstances", "must be -1, null or >= 1"),
    ("min succeeded above instances", {f"{W2}.completion": {"minSucceededInstances": 3}}, f"{W2}.completion.minSucceededInstances", "must be <= instances (2)"),
    ("shm above memory", {f"{W2}.extraContainerOptions": {"shmMB": 4096}}, f"{W2}.extraContainerOptions.shmMB", "must be <= resourcePerInstance.memoryMB (1024)"),
    ("gang allocation a string", {"extras": {"gangAllocation": "yes"}}, "extras.gangAllocation", "must be a boolean"),
    ("ssh plugin jobssh a string", {"extras": {"com.microsoft.pai.runtimeplugin": [{"plugin": "ssh", "parameters": {"jobssh": "true"}}]}}, "extras.com.microsoft.pai.runtimeplugin[0].parameters.jobssh", "must be a boolean"),
    ("notification unknown event", {"extras": {"jobStatusChangeNotification": {"finished": True}}}, "extras.jobStatusChangeNotification.finished", "unknown key 'finished'"),
    ("cpu 1e308, a whole float beyond 64 bits", {f"{RES}.cpu": 1e308}, f"{RES}.cpu", "must be at most 9223372036854775807 in size"),
    ("job retry count -1e19", {"jobRetryCount": -1e19}, "jobRetryCount", "must be at most 9223372036854775807 in size"),
]

# (case id, raw text, field path, message fragment)
TEXT_CASES: list[tuple[str, str | bytes, str, str]] = [
    ("broken JSON", '{"jobName": "x",\n  "image": }', "", "JSON syntax error at line 2, column 12"),
    ("broken YAML (seed 003 InfiniBand)", read_example("seeds/003_infiniband.broken.yaml"), "", "YAML syntax error at line 15, column 3"),
    ("YAML tab indentation", "protocolVersion: 2\nname: x\n\ttype: job\n", "", "YAML syntax error at line 3"),
    ("empty file", "", "", "the config is empty"),
    ("only comments", "# nothing here\n", "", "the config is empty"),
    ("top level is a list", "- a\n- b\n", "", "must be a mapping"),
    ("top level is a scalar", "just words", "", "must be a mapping"),
    ("duplicate YAML key", "protocolVersion: 2\nname: a\nname: b\n", "", "line 3, column 1: duplicate key 'name'"),
    ("duplicate JSON key", '{"jobName": "a", "jobName": "b"}', "", "duplicate key 'jobName'"),
    ("deeply nested JSON", "{" + '"a":[' * 100_000, "", "nested deeper than"),
    ("deeply nested YAML lists", "a: " + "[" * 100_000, "", "nested deeper than"),
    ("deeply nested YAML compact lists", "a:\n  " + "- " * 100_000 + "x\n", "", "nested deeper than"),
    ("deeply indented YAML", "".join(" " * i + "a:\n" for i in range(1000)) + " " * 1000 + "b: 1\n", "", "nested deeper than"),
    ("a boolean key", "protocolVersion: 2\nparameters:\n  on: 1\n", "parameters.True", "keys must be text; YAML reads this one as bool: quote it"),
    ("nested 70 levels", "a: " + "[" * 70 + "]" * 70 + "\n", "a" + "[0]" * 63, "nested deeper than 64 levels"),
    ("a Python object tag", "protocolVersion: 2\nname: !!python/object/apply:os.system [ls]\n", "", "line 2, column 7: unsupported YAML tag"),
    ("a billion laughs", "a: &a [x, x, x, x, x, x, x, x, x, x]\n" + "".join(f"{c}: &{c} [*{p}, *{p}, *{p}, *{p}, *{p}, *{p}, *{p}, *{p}, *{p}, *{p}]\n" for p, c in zip("abcdefgh", "bcdefghi", strict=True)), "", "more than 200000 values"),
    ("not UTF-8 text", "\udcff", "", "not UTF-8"),
    ("not UTF-8 bytes", b"name: \xff\xfe", "", "the config is not UTF-8 text (byte 7)"),
    ("neither v1 nor v2", '{"hello": "world"}', "jobName", "is required"),
    ("YAML date stays text, bad name still caught", "protocolVersion: 2\nname: 2024-01-01 x\n", "name", "may contain only"),
]


def _errors(text: str | bytes) -> list[tuple[str, str]]:
    with pytest.raises(JobConfigError) as caught:
        load(text)
    return caught.value.english


def _assert_has(errors: list[tuple[str, str]], field: str, fragment: str) -> None:
    matching = [message for path, message in errors if path == field]
    assert matching, f"no error at {field!r}; got {errors}"
    assert any(fragment in message for message in matching), f"{fragment!r} not in {matching}"


@pytest.mark.parametrize(("changes", "field", "fragment"), [c[1:] for c in V1_CASES + V1_LIST_CASES], ids=[c[0] for c in V1_CASES + V1_LIST_CASES])
def test_it_rejects_invalid_v1_configs_naming_the_field(changes: dict[str, Any], field: str, fragment: str) -> None:
    doc = changed(V1_CONFIG, changes)
    _assert_has(_errors(as_v1_text(doc)), field, fragment)


@pytest.mark.parametrize(("changes", "field", "fragment"), [c[1:] for c in V2_CASES], ids=[c[0] for c in V2_CASES])
def test_it_rejects_invalid_v2_configs_naming_the_field(changes: dict[str, Any], field: str, fragment: str) -> None:
    doc = changed(V2_CONFIG, changes)
    _assert_has(_errors(as_v2_text(doc)), field, fragment)


@pytest.mark.parametrize(("text", "field", "fragment"), [c[1:] for c in TEXT_CASES], ids=[c[0] for c in TEXT_CASES])
def test_it_rejects_unreadable_documents_with_a_clear_error(text: str | bytes, field: str, fragment: str) -> None:
    _assert_has(_errors(text), field, fragment)


def test_the_table_covers_at_least_forty_invalid_configs() -> None:
    assert len(V1_CASES) + len(V1_LIST_CASES) + len(V2_CASES) + len(TEXT_CASES) >= 40


def test_it_rejects_a_10_mb_body_fast_without_parsing_it() -> None:
    body = "a: " + "x" * (10 * 1024 * 1024) + "\n"
    started = time.perf_counter()
    errors = _errors(body)
    assert time.perf_counter() - started < 0.5
    assert errors == [("", "the config is 10.0 MB; the limit is 1 MB")]


def test_it_rejects_a_10_mb_bytes_body_too() -> None:
    assert _errors(b"{" + b" " * (10 * 1024 * 1024) + b"}")[0][1].startswith("the config is 10.0 MB")


def test_it_gives_line_and_column_of_a_yaml_error_as_attributes() -> None:
    with pytest.raises(JobConfigError) as caught:
        load(read_example("seeds/003_infiniband.broken.yaml"))
    assert (caught.value.line, caught.value.column) == (15, 3)


def test_it_gives_line_and_column_of_a_json_error_as_attributes() -> None:
    with pytest.raises(JobConfigError) as caught:
        load('{\n  "jobName": "a",\n  "image" "b"\n}')
    assert (caught.value.line, caught.value.column) == (3, 11)


def test_it_reports_every_schema_error_at_once() -> None:
    doc = changed(V1_CONFIG, {"jobName": "bad name", "taskRoles.0.memoryMB": 10})
    fields = [field for field, _ in _errors(as_v1_text(doc))]
    assert fields == ["jobName", "taskRoles[0].memoryMB"]
