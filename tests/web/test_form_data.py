"""The Submit page's form <-> v2 config conversion and where errors are shown (no database)."""

import yaml
from django.http import QueryDict

from jobs.protocol import load
from tests.factories import default_image, v2_yaml
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
        query[key] = value
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
    assert form_to_config(data)["parameters"] == {"lr": "0.1"}


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
    by_field, general = field_errors([("taskRoles.worker.gpu", "bad"), ("foo.bar", "unknown")], ["worker"])
    assert by_field == {}
    assert general == ["taskRoles.worker.gpu: bad", "foo.bar: unknown"]


def test_it_finds_the_line_of_an_error_in_yaml_text():
    text = yaml.safe_dump(CONFIG, sort_keys=False)
    [error] = line_errors(text, [("taskRoles.worker.resourcePerInstance.gpu", "too many")])
    assert error.line is not None
    assert text.splitlines()[error.line - 1].strip() == "gpu: 1"


def test_it_finds_the_line_of_an_error_in_v1_json_text():
    text = '{\n  "jobName": "x",\n  "taskRoles": [\n    {\n      "name": "a",\n      "memoryMB": 10\n    }\n  ]\n}'
    [error] = line_errors(text, [("taskRoles[0].memoryMB", "must be >= 100")])
    assert error.line == 6


def test_it_gives_no_line_when_the_text_does_not_parse():
    [error] = line_errors("{ nope", [("name", "required")])
    assert error.line is None
