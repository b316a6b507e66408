"""Every example of the five seed documents (and OpenPAI's own) loads, converting to the v2 values
one would expect from reading the guide."""

from __future__ import annotations

from pathlib import Path

import pytest

from jobs.protocol import JobConfigError, load
from tests.protocol.conftest import example_files, example_ids, read_example

TF_PS_COMMAND_000 = (
    "pip --quiet install scipy && python code/tf_cnn_benchmarks.py --local_parameter_device=cpu --batch_size=32 "
    "--model=resnet20 --variable_update=parameter_server --data_dir=$PAI_DATA_DIR --data_name=cifar10 "
    "--train_dir=$PAI_OUTPUT_DIR --ps_hosts=$PAI_TASK_ROLE_ps_server_HOST_LIST "
    "--worker_hosts=$PAI_TASK_ROLE_worker_HOST_LIST --job_name=ps "
    "--task_index=$PAI_CURRENT_TASK_ROLE_CURRENT_TASK_INDEX"
)


@pytest.mark.parametrize("path", example_files(), ids=example_ids(example_files()))
def test_it_accepts_every_example(path: Path) -> None:
    config = load(path.read_text(encoding="utf-8"))
    assert config.spec["protocolVersion"] == 2
    assert config.spec["taskRoles"]


@pytest.mark.parametrize("path", example_files(broken=True), ids=example_ids(example_files(broken=True)))
def test_it_refuses_the_broken_examples_with_a_line_and_column(path: Path) -> None:
    with pytest.raises(JobConfigError) as caught:
        load(path.read_text(encoding="utf-8"))
    assert caught.value.line is not None
    assert caught.value.column is not None
    assert caught.value.english[0][0] == ""


def test_seed_000_converts_the_distributed_tensorflow_job() -> None:
    config = load(read_example("seeds/000_tensorflow_distributed.json"))
    spec = config.spec
    assert config.protocol_version == 1
    assert spec["name"] == "tensorflow-distributed-jobguid"
    assert spec["prerequisites"] == [
        {"name": "image", "type": "dockerimage", "uri": "your_docker_registry/pai.run.tensorflow"}
    ]
    assert spec["defaults"] == {"virtualCluster": "your_virtual_cluster"}
    assert spec["jobRetryCount"] == 0
    assert list(spec["taskRoles"]) == ["ps_server", "worker"]
    ps = spec["taskRoles"]["ps_server"]
    assert ps["instances"] == 2
    assert ps["dockerImage"] == "image"
    assert ps["resourcePerInstance"] == {"cpu": 2, "memoryMB": 8192, "gpu": 0, "ports": {"http": 1, "ssh": 1}}
    assert ps["extraContainerOptions"] == {"shmMB": 64}
    assert ps["completion"] == {"minFailedInstances": 1, "minSucceededInstances": None}
    assert ps["commands"] == [TF_PS_COMMAND_000]
    assert spec["taskRoles"]["worker"]["resourcePerInstance"]["gpu"] == 4


def test_seed_000_keeps_what_v2_has_no_place_for_in_extras_v1() -> None:
    v1 = load(read_example("seeds/000_tensorflow_distributed.json")).spec["extras"]["v1"]
    assert v1 == {
        "jobEnvs": {},
        "dataDir": "$PAI_DEFAULT_FS_URI/path/tensorflow-distributed-jobguid/data",
        "outputDir": "$PAI_DEFAULT_FS_URI/path/tensorflow-distributed-jobguid/output",
        "codeDir": "$PAI_DEFAULT_FS_URI/path/tensorflow-distributed-jobguid/code",
        "authFile": "",
        "killAllOnCompletedTaskNumber": 2,
        "portBeginAt": {"ps_server": {"http": 0, "ssh": 0}, "worker": {"http": 0, "ssh": 0}},
    }


def test_seed_001_keeps_job_envs_verbatim_and_the_worker_success_threshold() -> None:
    spec = load(read_example("seeds/001_tensorflow_distributed.json")).spec
    assert spec["extras"]["v1"]["jobEnvs"] == {"batch_size": 32, "job_model": "resnet20"}
    assert "--batch_size=$batch_size --model=$job_model" in spec["taskRoles"]["worker"]["commands"][0]
    assert spec["taskRoles"]["worker"]["completion"] == {"minFailedInstances": 1, "minSucceededInstances": 2}
    assert spec["taskRoles"]["ps_server"]["completion"]["minSucceededInstances"] is None
    assert spec["extras"]["v1"]["killAllOnCompletedTaskNumber"] is None


def test_seed_002_defaults_the_virtual_cluster_and_keeps_hdfs_uris_whole() -> None:
    spec = load(read_example("seeds/002_tensorflow_distributed.json")).spec
    assert spec["name"] == "tensorflow-distributed-example"
    assert spec["defaults"] == {"virtualCluster": "default"}
    assert spec["extras"]["v1"]["dataDir"] == "hdfs://path/to/data"
    assert spec["extras"]["v1"]["codeDir"] == "hdfs://path/to/code"
    assert spec["extras"]["v1"]["killAllOnCompletedTaskNumber"] == 2
    assert spec["taskRoles"]["worker"]["resourcePerInstance"]["ports"] == {}
    assert spec["taskRoles"]["worker"]["commands"][0].endswith("--job_name=worker --task_index=$PAI_TASK_ROLE_INDEX")


def test_seed_002_generation_accepts_number_for_task_number() -> None:
    spec = load(read_example("seeds/002_number_alias.json")).spec
    assert spec["taskRoles"]["worker"]["instances"] == 3
    assert spec["jobRetryCount"] == 1


def test_seed_003_prerequisites_example_keeps_callbacks_and_the_role_order() -> None:
    spec = load(read_example("seeds/003_test_prerequisites.yaml")).spec
    role = spec["taskRoles"]["taskrole"]
    assert role["prerequisites"] == ["install-git", "covid-19-data"]
    assert role["dockerImage"] == "docker_image_0"
    assert role["resourcePerInstance"] == {"cpu": 3, "memoryMB": 29065, "gpu": 1, "ports": {}}
    assert role["completion"] == {"minFailedInstances": 1, "minSucceededInstances": 1}
    assert role["extraContainerOptions"] == {"shmMB": 512}
    assert spec["prerequisites"][1]["callbacks"][0]["commands"] == [
        "mkdir -p /dataset/covid-19",
        "git clone https://github.com/ieee8023/covid-chestxray-dataset.git /dataset/covid-19",
    ]
    assert spec["extras"]["com.microsoft.pai.runtimeplugin"] == [{"plugin": "ssh", "parameters": {"jobssh": True}}]


def test_seed_003_notification_extras_are_kept() -> None:
    spec = load(read_example("seeds/003_job_status_notification.yaml")).spec
    assert spec["extras"]["jobStatusChangeNotification"] == {
        "running": True,
        "succeeded": True,
        "stopped": False,
        "failed": True,
        "retried": False,
    }


def test_seed_003_infiniband_example_expands_its_parameters() -> None:
    spec = load(read_example("seeds/003_infiniband.yaml")).spec
    master = spec["taskRoles"]["master"]
    assert master["extraContainerOptions"] == {"shmMB": 512, "infiniband": True}
    assert master["completion"] == {"minFailedInstances": 1, "minSucceededInstances": 1}
    assert "-x NCCL_DEBUG=INFO -x NCCL_IB_DISABLE=0" in master["commands"][1]
    assert master["commands"][1].rstrip().endswith("--model resnet50 --batch-size 64")
    assert "<%" not in master["commands"][1]
    assert spec["version"] == "horovod0.16.4-tf1.12.0-torch1.1.0-mxnet1.4.1-py3.5"
    assert spec["taskRoles"]["worker"]["completion"]["minSucceededInstances"] == 1
    plugin = spec["extras"]["com.microsoft.pai.runtimeplugin"][0]
    assert plugin == {"plugin": "ssh", "parameters": {"jobssh": True, "sshbarrier": True}}


@pytest.mark.parametrize("name", ["seeds/004_helloworld.json", "seeds/004_jupyter.json"])
def test_seed_004_keeps_unknown_fields_and_reads_empty_paths_as_unset(name: str) -> None:
    spec = load(read_example(name)).spec
    v1 = spec["extras"]["v1"]
    assert v1["taskRoleOtherFields"] == {"task_1": {"storageGB": 5}}
    assert v1["otherFields"]["tmp"]["vgInfo"]["显示卡(使用中/全部)"] == {
        "TITANX": "0/2" if "hello" in name else "1/2",
        "P100": "0/2",
    }
    assert v1["dataDir"] == v1["codeDir"] == v1["authFile"] == ""
    assert v1["outputDir"] == f"$PAI_DEFAULT_FS_URI/Output/{spec['name']}"
    assert spec["extras"]["gpuType"] == "TITANX"
    role = spec["taskRoles"]["task_1"]
    assert role["completion"] == {"minFailedInstances": None, "minSucceededInstances": None}
    assert role["resourcePerInstance"]["gpu"] == 1
    assert role["extraContainerOptions"] == {"shmMB": 64}


def test_seed_004_jupyter_command_keeps_its_escaped_quotes() -> None:
    spec = load(read_example("seeds/004_jupyter.json")).spec
    command = spec["taskRoles"]["task_1"]["commands"][0]
    assert '--NotebookApp.token=\\"\\"' in command
    assert spec["taskRoles"]["task_1"]["resourcePerInstance"]["ports"] == {"jupyter": 1}


def test_openpai_hello_world_reads_minus_one_as_no_success_threshold() -> None:
    spec = load(read_example("openpai/hello-world-job.yaml")).spec
    assert spec["taskRoles"]["taskrole"]["completion"] == {"minFailedInstances": 1, "minSucceededInstances": None}
    assert spec["taskRoles"]["taskrole"]["commands"][2] == (
        "python download_and_convert_data.py --dataset_name=cifar10 --dataset_dir=/tmp/data"
    )


def test_openpai_marketplace_example_expands_script_data_and_output_references() -> None:
    spec = load(read_example("openpai/tensorflow-cifar10.yaml")).spec
    worker = spec["taskRoles"]["worker"]
    assert worker["commands"][0] == "cd script_tensorflow_cnnbenchmarks/scripts/tf_cnn_benchmarks"
    assert "--data_dir=$PAI_WORK_DIR/data_cifar10" in worker["commands"][1]
    assert "--train_dir=$PAI_WORK_DIR/output_tensorflow_cifar10_model" in worker["commands"][1]
    assert "--model=resnet20 --batch_size=32" in worker["commands"][1]
    pre = spec["deployments"][0]["taskRoles"]["worker"]["preCommands"]
    assert pre[0].startswith("wget -qO- https://www.cs.toronto.edu/~kriz/cifar-10-python.tar.gz | tar xvz")
    assert "git checkout 84820935288cab696c9c2ac409cbd46a1f24723d" in pre[1]
    assert spec["defaults"] == {"virtualCluster": "default", "deployment": "tf_example"}


def test_openpai_protocol_example_masks_secrets_and_keeps_their_references() -> None:
    config = load(read_example("openpai/openpai-protocol-example.yaml"))
    assert config.secrets == {"docker_password": "password", "github_token": "cGFzc3dvcmQ="}
    assert config.spec["secrets"] == {"docker_password": "******", "github_token": "******"}
    assert config.spec["prerequisites"][0]["auth"]["password"] == "<% $secrets.docker_password %>"
    pre = config.spec["deployments"][0]["taskRoles"]["worker"]["preCommands"][1]
    assert pre.startswith("git clone https://MaggieQi:<% $secrets.github_token %>@github.com/MaggieQi/benchmarks")
    assert config.spec["taskRoles"]["ps_server"]["completion"]["minSucceededInstances"] is None
    assert config.spec["taskRoles"]["worker"]["extraContainerOptions"] == {"shmMB": 64}
