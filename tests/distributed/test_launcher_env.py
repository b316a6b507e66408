"""The launcher variables (jobs.protocol.launcher_env): torchrun's / Kubeflow PyTorchJob's
one-process-per-task values, the rendezvous port, and the hostfiles."""

import json

import pytest

from jobs.protocol import JobConfigError, load
from jobs.protocol.launcher_env import RENDEZVOUS_LABEL, hostfiles, ordered_tasks
from jobs.protocol.runtime_env import RuntimeContext, TaskAddress, build_runtime_env
from jobs.protocol.task_script import task_script
from scheduling.quota import task_requests


def role(instances, gpu=0, cpu=2):
    return {
        "instances": instances,
        "completion": {"minFailedInstances": 1, "minSucceededInstances": None},
        "taskRetryCount": 0,
        "dockerImage": "image",
        "resourcePerInstance": {"cpu": cpu, "memoryMB": 1024, "gpu": gpu, "ports": {}},
        "extraContainerOptions": {"shmMB": 64},
        "commands": ["true"],
    }


@pytest.fixture
def spec():
    """A worker role (2 tasks, 4 GPUs each) before a master role (1 task, no GPU, 3 CPUs)."""
    return {
        "protocolVersion": 2,
        "name": "ddp",
        "type": "job",
        "jobRetryCount": 0,
        "prerequisites": [],
        "parameters": {},
        "secrets": {},
        "defaults": {},
        "taskRoles": {"worker": role(2, gpu=4), "master": role(1, cpu=3)},
        "extras": {},
    }


def ctx():
    return RuntimeContext(
        job_name="ddp",
        user_name="alice",
        vc_name="default",
        default_fs_uri="",
        work_dir="/pai/work",
        data_dir="",
        output_dir="",
        code_dir="",
        addresses={
            ("worker", 0): TaskAddress(ip="10.0.0.2", ports={"ssh": [20001], RENDEZVOUS_LABEL: [20002]}),
            ("worker", 1): TaskAddress(ip="10.0.0.3", ports={"ssh": [20001]}),
            ("master", 0): TaskAddress(ip="10.0.0.4", ports={"ssh": [20001], RENDEZVOUS_LABEL: [20007]}),
        },
    )


def test_it_makes_task_0_of_the_first_role_rank_0_and_the_rendezvous(spec):
    env = build_runtime_env(spec, ctx(), "worker", 0)
    assert (env["MASTER_ADDR"], env["MASTER_PORT"]) == ("10.0.0.2", "20002")
    assert (env["WORLD_SIZE"], env["RANK"], env["NODE_RANK"]) == ("3", "0", "0")
    assert (env["LOCAL_RANK"], env["LOCAL_WORLD_SIZE"]) == ("0", "1")
    last = build_runtime_env(spec, ctx(), "master", 0)
    assert (last["RANK"], last["NODE_RANK"], last["MASTER_ADDR"]) == ("2", "2", "10.0.0.2")


def test_it_puts_the_role_extras_master_role_names_first(spec):
    spec["extras"]["masterRole"] = "master"
    assert ordered_tasks(spec) == [("master", 0), ("worker", 0), ("worker", 1)]
    env = build_runtime_env(spec, ctx(), "master", 0)
    assert (env["MASTER_ADDR"], env["MASTER_PORT"], env["RANK"]) == ("10.0.0.4", "20007", "0")
    assert build_runtime_env(spec, ctx(), "worker", 1)["RANK"] == "2"


def test_it_lets_the_jobs_own_values_win(spec):
    spec["parameters"] = {"MASTER_PORT": 29500}
    spec["extras"]["v1"] = {"jobEnvs": {"RANK": "7", "PAI_MPI_HOSTFILE": "/mine"}}
    env = build_runtime_env(spec, ctx(), "worker", 1)
    assert (env["MASTER_PORT"], env["RANK"], env["PAI_MPI_HOSTFILE"]) == ("29500", "7", "/mine")
    assert env["WORLD_SIZE"] == "3"


def test_it_asks_placement_for_the_rendezvous_port_on_the_master_task_only(spec):
    spec["extras"]["masterRole"] = "master"
    labels = {(r.role, r.index): [p.label for p in r.ports] for r in task_requests(spec)}
    assert RENDEZVOUS_LABEL in labels[("master", 0)]
    assert RENDEZVOUS_LABEL not in labels[("worker", 0)] + labels[("worker", 1)]


def test_it_writes_hostfiles_with_gpu_else_cpu_slots_in_rank_order(spec):
    files = hostfiles(spec)
    assert files["openmpi"] == "worker-0 slots=4\nworker-1 slots=4\nmaster-0 slots=3\n"
    assert files["mpich"] == "worker-0:4\nworker-1:4\nmaster-0:3\n"
    assert files["deepspeed"] == files["openmpi"]
    env = build_runtime_env(spec, ctx(), "worker", 0)
    assert env["PAI_MPI_HOSTFILE"] == "/pai/work/.pai-hostfiles/openmpi"
    assert env["PAI_MPICH_HOSTFILE"] == "/pai/work/.pai-hostfiles/mpich"
    assert env["PAI_DEEPSPEED_HOSTFILE"] == "/pai/work/.pai-hostfiles/deepspeed"


def test_it_writes_the_hostfiles_from_the_task_script(spec, tmp_path):
    import subprocess

    script = task_script(spec, "worker", {})
    subprocess.run(["bash", "-c", script], env={"PAI_WORK_DIR": str(tmp_path), "PATH": "/usr/bin:/bin"}, check=True)
    assert (tmp_path / ".pai-hostfiles" / "mpich").read_text() == "worker-0:4\nworker-1:4\nmaster-0:3\n"
    assert (tmp_path / ".pai-hostfiles" / "openmpi").read_text() == hostfiles(spec)["openmpi"]


def test_it_refuses_a_master_role_no_task_role_has():
    config = {
        "protocolVersion": 2,
        "name": "ddp",
        "type": "job",
        "prerequisites": [{"name": "img", "type": "dockerimage", "uri": "busybox"}],
        "taskRoles": {
            "worker": {
                "instances": 2,
                "dockerImage": "img",
                "resourcePerInstance": {"cpu": 1, "memoryMB": 512, "gpu": 0},
                "commands": ["true"],
            }
        },
        "extras": {"masterRole": "chief"},
    }
    with pytest.raises(JobConfigError) as info:
        load(json.dumps(config))
    assert [field for field, _ in info.value.english] == ["extras.masterRole"]


def test_it_leaves_the_rendezvous_port_out_of_openpais_port_lists(spec):
    env = build_runtime_env(spec, ctx(), "worker", 0)
    assert env["PAI_CONTAINER_HOST_PORT_LIST"] == "ssh:20001"
    assert "PAI_CONTAINER_HOST_rendezvous_PORT_LIST" not in env
    assert env["MASTER_PORT"] == "20002"
