"""OpenPAI scheduling extras the portal honours (priority class, skuType, the tensorboard port)
and those it refuses at submit, each naming its field."""

from __future__ import annotations

import subprocess
from typing import Any

import pytest

from jobs.protocol import JobConfigError, load, task_script
from jobs.protocol.honoured import job_priority, unsupported
from jobs.protocol.spec import NormalizedSpec
from tests.protocol.conftest import V2_CONFIG, as_v2_text, changed

RUNTIME = "com.microsoft.pai.runtimeplugin"
TENSORBOARD = {"plugin": "tensorboard", "parameters": {"port": 11449, "logdir": {"train": "/tmp/tb"}}}


def _spec(extras: dict[str, Any], **changes: Any) -> NormalizedSpec:
    return load(as_v2_text(changed(V2_CONFIG, {"extras": extras, **changes}))).spec


def _errors(extras: dict[str, Any], **changes: Any) -> list[tuple[str, str]]:
    with pytest.raises(JobConfigError) as caught:
        _spec(extras, **changes)
    return caught.value.english


@pytest.mark.parametrize(("priority_class", "priority"), [("crit", 120), ("prod", 100), ("test", 10), ("oppo", -1)])
def test_it_takes_openpais_priority_numbers(priority_class: str, priority: int) -> None:
    assert job_priority(_spec({"hivedScheduler": {"jobPriorityClass": priority_class}})) == priority


def test_a_job_without_a_priority_class_is_test_as_in_openpai() -> None:
    assert job_priority(_spec({})) == 10


def test_sku_type_becomes_the_jobs_gpu_type() -> None:
    assert _spec({"hivedScheduler": {"taskRoles": {"worker": {"skuType": "K80"}}}})["extras"]["gpuType"] == "K80"


def test_it_refuses_two_sku_types_in_one_job() -> None:
    ps = {**V2_CONFIG["taskRoles"]["worker"]}
    hived = {"taskRoles": {"worker": {"skuType": "K80"}, "ps": {"skuType": "V100"}}}
    assert _errors({"hivedScheduler": hived}, **{"taskRoles.ps": ps}) == [
        (
            "extras.hivedScheduler.taskRoles.worker.skuType",
            "the portal runs a job on one GPU type; the task roles ask for K80, V100",
        )
    ]


def test_it_refuses_a_sku_number_other_than_the_roles_gpus() -> None:
    hived = {"taskRoles": {"worker": {"skuType": "K80", "skuNum": 4}}}
    assert _errors({"hivedScheduler": hived}) == [
        (
            "extras.hivedScheduler.taskRoles.worker.skuNum",
            "asks for 4 GPUs but resourcePerInstance.gpu is 0; set them alike",
        )
    ]


def test_the_tensorboard_plugin_gets_a_port_on_the_first_task_role() -> None:
    spec = _spec({RUNTIME: [TENSORBOARD]})
    assert spec["taskRoles"]["worker"]["resourcePerInstance"]["ports"] == {"tensorboard": 1}


def test_tensorboard_runs_in_the_first_task_of_the_first_role_only() -> None:
    second = {**V2_CONFIG["taskRoles"]["worker"]}
    spec = _spec({RUNTIME: [TENSORBOARD]}, **{"taskRoles.ps": second})
    script = task_script(spec, "worker", {})
    assert 'if [ "$PAI_CURRENT_TASK_ROLE_CURRENT_TASK_INDEX" = 0 ]' in script
    assert "tensorboard --logdir=/tmp/tb --port=$PAI_CONTAINER_HOST_tensorboard_PORT_LIST --bind_all &" in script
    assert "tensorboard --logdir" not in task_script(spec, "ps", {})
    assert "tensorboard" not in spec["taskRoles"]["ps"]["resourcePerInstance"]["ports"]


def test_tensorboards_logdir_expands_the_tasks_variables_and_nothing_else(tmp_path) -> None:
    """As OpenPAI's runtime writes the logdir into a shell script unquoted: `$PAI_WORK_DIR/tb`
    names the work dir's folder; a command substitution stays text."""
    logdir = "$PAI_WORK_DIR/tb $(touch pwned)"
    plugin = {"plugin": "tensorboard", "parameters": {"logdir": {"train": logdir}}}
    script = task_script(_spec({RUNTIME: [plugin]}), "worker", {})
    line = next(line for line in script.splitlines() if "--logdir" in line)
    word = line.split("--logdir=", 1)[1].rsplit(" --port=", 1)[0]

    command = ["bash", "-c", f"printf %s {word}"]
    shown = subprocess.run(command, env={"PAI_WORK_DIR": "/pai/work"}, cwd=tmp_path, capture_output=True, text=True)

    assert shown.stdout == "/pai/work/tb $(touch pwned)"
    assert not (tmp_path / "pwned").exists()


def test_tensorboard_takes_a_logdir_written_as_text() -> None:
    plugin = {"plugin": "tensorboard", "parameters": {"logdir": "/mnt/logs"}}
    assert "tensorboard --logdir=/mnt/logs --port=" in task_script(_spec({RUNTIME: [plugin]}), "worker", {})


def test_tensorboard_serves_several_logdirs_by_name() -> None:
    plugin = {"plugin": "tensorboard", "parameters": {"logdir": {"a": "/x", "b": "/y"}}}
    assert "--logdir_spec=a:/x,b:/y" in task_script(_spec({RUNTIME: [plugin]}), "worker", {})


@pytest.mark.parametrize(
    ("extras", "changes", "field"),
    [
        ({RUNTIME: [{"plugin": "blobfuse_cache"}]}, {}, f"extras.{RUNTIME}[0].plugin"),
        (
            {RUNTIME: [{"plugin": "tensorboard", "parameters": {"port": 1}}]},
            {},
            f"extras.{RUNTIME}[0].parameters.logdir",
        ),
        ({"storages": [{"name": "team", "mountPath": "data"}]}, {}, "extras.storages[0].mountPath"),
        (
            {RUNTIME: [{"plugin": "teamwise_storage", "parameters": {"storageConfigNames": ["a", ""]}}]},
            {},
            f"extras.{RUNTIME}[0].parameters.storageConfigNames[1]",
        ),
        ({"hivedScheduler": {"lazyPreemptionEnable": True}}, {}, "extras.hivedScheduler.lazyPreemptionEnable"),
        (
            {"hivedScheduler": {"taskRoles": {"worker": {"pinnedCellId": "rack-1"}}}},
            {},
            "extras.hivedScheduler.taskRoles.worker.pinnedCellId",
        ),
        ({}, {"prerequisites.1.plugin": "com.microsoft.pai.runtimeplugin.git"}, "prerequisites[1].plugin"),
    ],
)
def test_it_refuses_what_it_cannot_honour_naming_the_field(
    extras: dict[str, Any], changes: dict[str, Any], field: str
) -> None:
    assert [error[0] for error in unsupported(_spec(extras, **changes))] == [field]


def test_it_accepts_every_notification_state_of_openpai() -> None:
    notify = {
        "jobStatusChangeNotification": dict.fromkeys(("running", "retried", "succeeded", "failed", "stopped"), True)
    }
    assert unsupported(_spec(notify)) == []


def test_it_accepts_what_it_honours_or_what_changes_nothing() -> None:
    extras = {
        RUNTIME: [{"plugin": "ssh", "parameters": {"jobssh": True}}, {"plugin": "cmd", "parameters": {}}, TENSORBOARD],
        "hivedScheduler": {
            "jobPriorityClass": "prod",
            "taskRoles": {"worker": {"skuType": "K80", "pinnedCellId": None}},
        },
        "jobStatusChangeNotification": {"failed": True, "succeeded": False, "running": False},
        "storages": [],
    }
    assert unsupported(_spec(extras)) == []
