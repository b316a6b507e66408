"""The Submit page's form <-> v2 config conversion and where errors are shown (no database)."""

from typing import Any

import pytest
import yaml
from django.http import QueryDict
from hypothesis import given, settings

from catalogue import Message
from jobs.protocol import load
from jobs.protocol.parsing import parse
from tests.conftest import examples
from tests.factories import default_image, v2_yaml
from tests.protocol.conftest import as_v2_text, example_files, example_ids, from_yaml
from tests.protocol.test_export import v2_configs
from web.submit_errors import field_errors, form_field_for, line_errors
from web.submit_form import JobFormData, config_to_form, config_to_yaml, form_input_errors, form_to_config

CONFIG = {
    "protocolVersion": 2,
    "name": "mnist",
    "type": "job",
    "jobRetryCount": 1,
    "prerequisites": [
        {"name": "img", "type": "dockerimage", "uri": default_image()},
        {"name": "setup", "type": "script", "callbacks": [{"event": "taskStarts", "commands": ["echo hi"]}]},
    ],
    "parameters": {"steps": "100"},
    "taskRoles": {
        "worker": {
            "instances": 2,
            "completion": {"minFailedInstances": 1, "minSucceededInstances": -1},
            "taskRetryCount": 0,
            "dockerImage": "img",
            "prerequisites": ["setup"],
            "resourcePerInstance": {"cpu": 2, "memoryMB": 2048, "gpu": 1, "ports": {"tb": 1}},
            "extraContainerOptions": {"shmMB": 512},
            "commands": ["python train.py --steps <% $parameters.steps %>", "echo done"],
        }
    },
    "defaults": {"virtualCluster": "default"},
    "extras": {"gpuType": "P100", "com.microsoft.pai.runtimeplugin": [{"plugin": "ssh"}]},
}


def post_of(data: JobFormData) -> QueryDict:
    query = QueryDict(mutable=True)
    for key, value in data.job.items():
        if key == "storages":
            query.setlist(key, value.splitlines())
        elif key in ("jobssh", "tensorboard"):
            if value == "on":
                query[key] = value  # an unticked checkbox is absent from a post
        else:
            query[key] = value
    query["tools_shown"] = "1"
    for index, role in enumerate(data.roles):
        for key, value in role.items():
            query[f"roles-{index}-{key}"] = value
    query["base_config"] = data.base_config_json
    return query


def test_it_fills_the_form_from_a_v2_config():
    data = config_to_form(CONFIG)
    assert data.job["name"] == "mnist"
    assert data.job["image"] == default_image()
    assert data.job["gpu_type"] == "P100"
    assert data.job["parameters"] == "steps=100"
    assert data.roles[0]["name"] == "worker"
    assert data.roles[0]["gpu"] == "1"
    assert data.roles[0]["shm_mb"] == "512"
    assert data.roles[0]["ports"] == "tb:1"
    assert data.roles[0]["command"].splitlines()[1] == "echo done"


def test_it_round_trips_a_config_through_the_form_unchanged():
    data = JobFormData.from_post(post_of(config_to_form(CONFIG)))
    assert form_to_config(data) == CONFIG


def test_it_keeps_what_the_form_cannot_show_when_a_value_changes():
    data = JobFormData.from_post(post_of(config_to_form(CONFIG)))
    data.roles[0]["gpu"] = "4"
    config = form_to_config(data)
    assert config["taskRoles"]["worker"]["resourcePerInstance"]["gpu"] == 4
    assert config["taskRoles"]["worker"]["prerequisites"] == ["setup"]
    assert config["extras"]["com.microsoft.pai.runtimeplugin"] == [{"plugin": "ssh"}]


def test_it_builds_a_config_from_a_blank_form_with_two_roles():
    data = JobFormData.blank()
    data.job.update(name="two", image="busybox")
    data.roles = [dict(data.roles[0], name="ps"), dict(data.roles[0], name="worker", instances="3")]
    config = form_to_config(data)
    assert list(config["taskRoles"]) == ["ps", "worker"]
    assert config["taskRoles"]["worker"]["instances"] == 3
    assert config["prerequisites"] == [{"name": "docker_image_0", "type": "dockerimage", "uri": "busybox"}]
    assert config["taskRoles"]["ps"]["dockerImage"] == "docker_image_0"


def test_it_proposes_a_fresh_form_that_runs_echo_hello_on_the_default_image():
    data = JobFormData.blank("alice.smith")
    assert data.job["name"].startswith("alice_smith_")
    assert data.job["image"] == default_image()
    spec = load(config_to_yaml(form_to_config(data))).spec
    assert spec["taskRoles"]["taskrole"]["commands"] == ["echo hello"]


def test_it_keeps_an_absent_completion_threshold_absent_through_the_form():
    text = v2_yaml("direct", instances=3)
    data = JobFormData.from_post(post_of(config_to_form(yaml.safe_load(text))))
    through_form = load(config_to_yaml(form_to_config(data))).spec
    assert through_form["taskRoles"] == load(text).spec["taskRoles"]
    assert through_form["taskRoles"]["worker"]["completion"]["minSucceededInstances"] == 3


def test_it_shows_a_null_threshold_as_minus_one():
    config = yaml.safe_load(
        v2_yaml("direct").replace("instances: 1", "instances: 1\n    completion: {minSucceededInstances: null}")
    )
    assert config_to_form(config).roles[0]["min_succeeded"] == "-1"


def test_it_passes_zero_instances_to_the_validator_unchanged():
    data = JobFormData.blank("alice")
    data.roles[0]["instances"] = "0"
    assert form_to_config(data)["taskRoles"]["taskrole"]["instances"] == 0


def test_it_reports_a_parameter_line_without_an_equals_sign():
    data = JobFormData.blank("alice")
    data.job["parameters"] = "lr=0.1\nsteps 100"
    assert form_input_errors(data) == {"parameters": ["Line 2 is not name=value."]}
    assert form_to_config(data)["parameters"] == {"lr": 0.1}


def test_it_reports_a_port_without_a_count():
    data = JobFormData.blank("alice")
    data.roles[0]["ports"] = "http, tb:2"
    assert form_input_errors(data) == {"roles-0-ports": ["http has no count: write http:1 for one port."]}


def test_it_passes_text_typed_into_a_number_field_to_the_validator():
    data = JobFormData.blank()
    data.roles[0]["memory_mb"] = "lots"
    assert form_to_config(data)["taskRoles"]["taskrole"]["resourcePerInstance"]["memoryMB"] == "lots"


def test_it_reads_role_rows_with_gaps_left_by_removed_roles():
    query = QueryDict("name=j&roles-0-name=a&roles-3-name=b&roles-3-gpu=2")
    data = JobFormData.from_post(query)
    assert [role["name"] for role in data.roles] == ["a", "b"]
    assert data.roles[1]["gpu"] == "2"


def test_it_maps_v2_error_paths_to_form_fields():
    roles = ["ps", "worker"]
    assert form_field_for("taskRoles.worker.resourcePerInstance.gpu", roles) == "roles-1-gpu"
    assert form_field_for("taskRoles.ps.extraContainerOptions.shmMB", roles) == "roles-0-shm_mb"
    assert form_field_for("taskRoles.ps.commands[0]", roles) == "roles-0-command"
    assert form_field_for("name", roles) == "name"
    assert form_field_for("defaults.virtualCluster", roles) == "virtual_cluster"
    assert form_field_for("prerequisites[0].uri", roles) == "image"


def test_it_maps_v1_error_paths_by_position():
    assert form_field_for("taskRoles[0].memoryMB", ["only"]) == "roles-0-memory_mb"
    assert form_field_for("jobName", ["only"]) == "name"


def test_it_puts_errors_without_a_field_at_the_top():
    errors = [
        ("taskRoles.worker.gpu", Message.of("config.required")),
        ("foo.bar", Message.of("config.unknown_key", key="bar")),
    ]
    by_field, general = field_errors(errors, ["worker"])
    assert by_field == {}
    assert general == ["taskRoles.worker.gpu: is required", "foo.bar: unknown key 'bar'"]


def test_it_finds_the_line_of_an_error_in_yaml_text():
    text = yaml.safe_dump(CONFIG, sort_keys=False)
    [error] = line_errors(text, [("taskRoles.worker.resourcePerInstance.gpu", Message.of("config.max", value=0))])
    assert error.line is not None
    assert text.splitlines()[error.line - 1].strip() == "gpu: 1"


def test_it_finds_the_line_of_an_error_in_v1_json_text():
    text = '{\n  "jobName": "x",\n  "taskRoles": [\n    {\n      "name": "a",\n      "memoryMB": 10\n    }\n  ]\n}'
    [error] = line_errors(text, [("taskRoles[0].memoryMB", Message.of("config.min", value=100))])
    assert error.line == 6


def test_it_gives_no_line_when_the_text_does_not_parse():
    [error] = line_errors("{ nope", [("name", Message.of("config.required"))])
    assert error.line is None


# --- issue 36: Tools and Data, Other settings, secrets, types --------------------------------------

FULL: dict[str, Any] = {
    "protocolVersion": 2,
    "name": "everything",
    "type": "job",
    "jobRetryCount": 2,
    "prerequisites": [
        {
            "name": "img",
            "type": "dockerimage",
            "uri": "registry.example.com/team/train:1",
            "auth": {"username": "bot", "password": "<% $secrets.registry %>", "registryuri": "registry.example.com"},
        }
    ],
    "parameters": {"steps": 100, "lr": 0.001, "tag": "007", "name": "run"},
    "secrets": {"registry": "hunter2", "token": "abc"},
    "taskRoles": {
        "trainer": {
            "instances": 1,
            "dockerImage": "img",
            "resourcePerInstance": {"cpu": 1, "memoryMB": 512, "gpu": 0},
            "commands": ["python train.py"],
        }
    },
    "defaults": {"virtualCluster": "default"},
    "extras": {
        "hivedScheduler": {"jobPriorityClass": "prod"},
        "storages": [{"name": "team", "mountPath": "/data"}],
        "jobStatusChangeNotification": {"failed": True},
        "com.microsoft.pai.runtimeplugin": [
            {
                "plugin": "ssh",
                "parameters": {
                    "jobssh": False,
                    "sshbarrier": True,
                    "userssh": {"type": "custom", "value": "ssh-ed25519 AAAAC3Nza me@laptop"},
                },
            },
            {"plugin": "tensorboard", "parameters": {"port": 11449, "logdir": {"path": "/mnt/tb"}}},
        ],
    },
}


def round_trip(config):
    return JobFormData.from_post(post_of(config_to_form(config)))


def test_it_round_trips_every_tools_and_data_setting_unchanged():
    assert form_to_config(round_trip(FULL)) == FULL


def test_it_round_trips_a_config_through_the_form_and_yaml_twice():
    once = form_to_config(round_trip(FULL))
    twice = form_to_config(round_trip(yaml.safe_load(config_to_yaml(once))))
    assert twice == FULL


def test_it_fills_the_tools_and_data_fields():
    job = config_to_form(FULL).job
    assert job["jobssh"] == ""
    assert job["ssh_keys"] == "ssh-ed25519 AAAAC3Nza me@laptop"
    assert (job["tensorboard"], job["tensorboard_logdir"]) == ("on", "/mnt/tb")
    assert job["storages"] == "team"
    assert (job["registry_username"], job["registry_uri"]) == ("bot", "registry.example.com")
    assert job["priority"] == "prod"


def test_it_keeps_numeric_parameters_numbers_and_text_text():
    parameters = form_to_config(round_trip(FULL))["parameters"]
    assert parameters == {"steps": 100, "lr": 0.001, "tag": "007", "name": "run"}
    assert type(parameters["steps"]) is int and type(parameters["lr"]) is float


def test_it_types_a_new_number_as_yaml_does():
    data = JobFormData.blank("alice")
    data.job["parameters"] = "steps=3\nlr=0.5\ntag=007\nflag=yes\nbig=1e3"
    assert form_to_config(data)["parameters"] == {"steps": 3, "lr": 0.5, "tag": "007", "flag": "yes", "big": "1e3"}


def test_it_shows_what_the_form_has_no_field_for_as_other_settings():
    other = yaml.safe_load(round_trip(FULL).other_settings)
    assert other["extras"]["jobStatusChangeNotification"] == {"failed": True}
    assert other["extras"]["com.microsoft.pai.runtimeplugin"] == [
        {"plugin": "ssh", "parameters": {"sshbarrier": True}},
        {"plugin": "tensorboard", "parameters": {"port": 11449}},
    ]
    assert "secrets" not in other and "parameters" not in other and "taskRoles" not in other


def test_it_shows_no_other_settings_for_a_config_the_form_covers():
    data = JobFormData.blank("alice")
    assert config_to_form(form_to_config(data)).other_settings == ""


def test_it_never_puts_secret_values_into_the_hidden_config():
    hidden = round_trip(FULL).base_config_json
    assert "hunter2" not in hidden and "abc" not in hidden
    inline = dict(FULL, prerequisites=[dict(FULL["prerequisites"][0], auth={"username": "u", "password": "pa55"})])
    assert "pa55" not in config_to_form(inline).base_config_json


def test_it_writes_the_tools_a_fresh_form_turns_on():
    data = JobFormData.blank("alice")
    data.job.update(jobssh="", ssh_keys="ssh-ed25519 AAAA me", tensorboard="on", priority="crit", storages="team")
    data.job.update(registry_username="bot", registry_password="pw", registry_uri="r.example.com")
    config = form_to_config(data)
    plugins = config["extras"]["com.microsoft.pai.runtimeplugin"]
    assert plugins[0] == {
        "plugin": "ssh",
        "parameters": {"jobssh": False, "userssh": {"type": "custom", "value": "ssh-ed25519 AAAA me"}},
    }
    assert plugins[1] == {"plugin": "tensorboard", "parameters": {"logdir": {"path": "/mnt/tensorboard"}}}
    assert config["extras"]["hivedScheduler"] == {"jobPriorityClass": "crit"}
    assert config["extras"]["storages"] == [{"name": "team"}]
    assert config["prerequisites"][0]["auth"] == {"username": "bot", "password": "pw", "registryuri": "r.example.com"}


def test_a_fresh_form_adds_no_plugin_it_was_not_asked_for():
    config = form_to_config(JobFormData.blank("alice"))
    assert "extras" not in config


def test_it_removes_tensorboard_and_storages_when_unticked():
    data = round_trip(FULL)
    data.job.update(tensorboard="", storages="")
    extras = form_to_config(data)["extras"]
    assert [p["plugin"] for p in extras["com.microsoft.pai.runtimeplugin"]] == ["ssh"]
    assert "storages" not in extras


def test_it_reads_secrets_from_their_rows():
    query = post_of(JobFormData.blank("alice"))
    query.setlist("secret_name", ["token", "", "pin", "port"])
    query.setlist("secret_value", ["abc", "", "0042", "22"])
    assert form_to_config(JobFormData.from_post(query))["secrets"] == {"token": "abc", "pin": "0042", "port": "22"}


def test_it_reports_a_secret_value_without_a_name_without_quoting_it():
    query = post_of(JobFormData.blank("alice"))
    query.setlist("secret_name", [""])
    query.setlist("secret_value", ["hunter2"])
    errors = form_input_errors(JobFormData.from_post(query))
    assert errors == {"secrets": ["Secret 1 has no name."]}


def test_it_maps_storage_and_priority_errors_to_their_fields():
    assert form_field_for("extras.storages[0].name", ["worker"]) == "storages"
    assert form_field_for("extras.hivedScheduler.jobPriorityClass", ["worker"]) == "priority"


def test_it_shows_plugin_settings_no_field_covers():
    config = dict(
        FULL,
        extras={
            "com.microsoft.pai.runtimeplugin": [
                {"plugin": "tensorboard", "parameters": {"port": 11449, "logdir": {"path": "/mnt/tb"}}},
                {"plugin": "teamwise_storage", "parameters": {"storageConfigNames": []}},
            ]
        },
    )
    other = yaml.safe_load(config_to_form(config).other_settings)
    assert other["extras"]["com.microsoft.pai.runtimeplugin"] == [
        {"plugin": "tensorboard", "parameters": {"port": 11449}},
        {"plugin": "teamwise_storage", "parameters": {"storageConfigNames": []}},  # the user's default storages
    ]
    assert form_to_config(round_trip(config))["extras"] == config["extras"]


def test_it_shows_nothing_of_a_teamwise_plugin_whose_storages_are_ticked():
    config = dict(
        FULL,
        extras={
            "com.microsoft.pai.runtimeplugin": [
                {"plugin": "teamwise_storage", "parameters": {"storageConfigNames": ["team"]}}
            ]
        },
    )
    assert config_to_form(config).job["storages"] == "team"
    assert "extras" not in (yaml.safe_load(config_to_form(config).other_settings) or {})


@pytest.mark.parametrize("path", example_files(), ids=example_ids(example_files()))
def test_every_example_runs_the_same_after_a_trip_through_the_form_and_its_yaml(path):
    """Form -> YAML export -> import -> form keeps every v2 field: the spec that runs is the same."""
    text = path.read_text(encoding="utf-8")
    doc, _is_json = parse(text)
    if "jobName" in doc or isinstance(doc.get("taskRoles"), list):
        doc = dict(load(text).spec)  # a v1 config opens in the form as its v2 spec, as the page does
    once = form_to_config(round_trip(doc))
    twice = form_to_config(round_trip(yaml.safe_load(config_to_yaml(once))))
    assert load(config_to_yaml(twice)).spec == load(text).spec


@settings(max_examples=examples(60), deadline=None)
@given(v2_configs())
def test_generated_v2_configs_run_the_same_after_a_trip_through_the_form(doc):
    """Parameters of any YAML type, ports, completion thresholds, shm, extras: the same spec. A
    secret travels as text in a password input (one line), and comes back as YAML types it."""
    doc["secrets"] = {name: value.replace("\n", " ") for name, value in doc["secrets"].items()}
    through_form = load(config_to_yaml(form_to_config(round_trip(from_yaml(as_v2_text(doc)))))).spec
    direct = load(as_v2_text(doc)).spec
    as_text = {name: str(value) for name, value in (direct.get("secrets") or {}).items()}
    assert {name: str(value) for name, value in (through_form.get("secrets") or {}).items()} == as_text
    assert {**through_form, "secrets": None} == {**direct, "secrets": None}


def test_it_shows_a_plugin_entry_it_cannot_read_as_it_is():
    strange = [{"plugin": ["ssh"]}, None, 3]
    config = dict(FULL, extras={"com.microsoft.pai.runtimeplugin": strange})
    assert yaml.safe_load(config_to_form(config).other_settings)["extras"]["com.microsoft.pai.runtimeplugin"] == strange


@pytest.mark.parametrize(("jobssh", "ticked"), [(None, "on"), (False, ""), ("false", ""), ("off", ""), ("yes", "on")])
def test_it_ticks_job_ssh_as_the_ssh_runtime_reads_it(jobssh, ticked):
    plugin = {"plugin": "ssh", "parameters": {"jobssh": jobssh}}
    assert config_to_form(dict(FULL, extras={"com.microsoft.pai.runtimeplugin": [plugin]})).job["jobssh"] == ticked


def test_it_shows_a_tensorboard_logdir_written_as_text():
    plugin = {"plugin": "tensorboard", "parameters": {"logdir": "/mnt/logs"}}
    config = dict(FULL, extras={"com.microsoft.pai.runtimeplugin": [plugin]})
    assert config_to_form(config).job["tensorboard_logdir"] == "/mnt/logs"
    assert form_to_config(round_trip(config))["extras"] == config["extras"]


def test_it_keeps_a_secret_holding_a_record_separator_one_secret():
    """str.splitlines() also ends a line at \\x1e (and \\x1c, \\x1d, \\x85, \\u2028): the property
    test's trip through the form split such a value into two secrets."""
    config = {**FULL, "secrets": {"token": "a\x1eb\u2028c"}}
    assert form_to_config(round_trip(config))["secrets"] == {"token": "a\x1eb\u2028c"}
