"""The seeds' own example jobs, end to end through the pure cores: load the config, place it,
build each task's environment, and check every variable the seed's command reads is set."""

import re

import pytest

from clusters.placement import JobRequest, NodeState, PortRequest, Resources, TaskRequest, VcState, place
from jobs.protocol import load
from jobs.protocol.runtime_env import RuntimeContext, TaskAddress, build_runtime_env

TF_ARGS = (
    "--data_dir=$PAI_DATA_DIR --data_name=cifar10 --train_dir=$PAI_OUTPUT_DIR "
    "--ps_hosts=$PAI_TASK_ROLE_ps_server_HOST_LIST --worker_hosts=$PAI_TASK_ROLE_worker_HOST_LIST"
)

# Seed 000 / 001: the distributed TensorFlow example, as the seeds print it (with // comments).
SEED_001 = """{
  "jobName": "tensorflow-distributed-jobguid",
  // customized tensorflow docker image with hdfs, cuda and cudnn support
  "image": "your_docker_registry/pai.run.tensorflow",
  "virtualCluster": "default",
  "taskRoles": [
    {
      "name": "ps_server",
      "taskNumber": 2, "cpuNumber": 2, "memoryMB": 8192, "gpuNumber": 0,
      "portList": [{"label": "http", "beginAt": 0, "portNumber": 1}, {"label": "ssh", "beginAt": 0, "portNumber": 1}],
      "command": "python code/tf_cnn_benchmarks.py --batch_size=$batch_size --model=$job_model TF_ARGS --job_name=ps --task_index=$PAI_CURRENT_TASK_ROLE_CURRENT_TASK_INDEX"
    },
    {
      "name": "worker",
      "taskNumber": 2, "cpuNumber": 2, "memoryMB": 16384, "gpuNumber": 4,
      "portList": [{"label": "http", "beginAt": 0, "portNumber": 1}, {"label": "ssh", "beginAt": 0, "portNumber": 1}],
      "command": "python code/tf_cnn_benchmarks.py --batch_size=$batch_size --model=$job_model TF_ARGS --job_name=worker --task_index=$PAI_CURRENT_TASK_ROLE_CURRENT_TASK_INDEX",
      "minSucceededTaskCount": 2
    }
  ],
  "retryCount": 0,
  "jobEnvs": {"batch_size": 32, "job_model": "resnet20"},
  "extras": {}
}""".replace("TF_ARGS", TF_ARGS)  # noqa: E501

# Seed 002: the oldest generation, host lists by role number and PAI_TASK_ROLE_INDEX.
SEED_002 = """{
  "jobName": "tensorflow-distributed-example",
  "image": "your_docker_registry/pai.run.tensorflow",
  "dataDir": "hdfs://path/to/data", "outputDir": "hdfs://path/to/output", "codeDir": "hdfs://path/to/code",
  "taskRoles": [
    {"name": "ps_server", "taskNumber": 2, "cpuNumber": 2, "memoryMB": 8192, "gpuNumber": 0,
     "portList": [{"label": "http", "beginAt": 0, "portNumber": 1}],
     "command": "python tf_cnn_benchmarks.py --num_gpus=4 --data_dir=$PAI_DATA_DIR --train_dir=$PAI_OUTPUT_DIR --ps_hosts=$PAI_TASK_ROLE_0_HOST_LIST --worker_hosts=$PAI_TASK_ROLE_1_HOST_LIST --job_name=ps --task_index=$PAI_TASK_ROLE_INDEX"},
    {"name": "worker", "taskNumber": 2, "cpuNumber": 2, "memoryMB": 16384, "gpuNumber": 4,
     "portList": [{"label": "http", "beginAt": 0, "portNumber": 1}],
     "command": "python tf_cnn_benchmarks.py --num_gpus=4 --data_dir=$PAI_DATA_DIR --train_dir=$PAI_OUTPUT_DIR --ps_hosts=$PAI_TASK_ROLE_0_HOST_LIST --worker_hosts=$PAI_TASK_ROLE_1_HOST_LIST --job_name=worker --task_index=$PAI_TASK_ROLE_INDEX"}
  ],
  "killAllOnCompletedTaskNumber": 2,
  "retryCount": 0
}"""  # noqa: E501

VARIABLE = re.compile(r"\$([A-Za-z_][A-Za-z0-9_]*)")


def task_requests(spec):
    begin_at = spec["extras"].get("v1", {}).get("portBeginAt", {})
    requests = []
    for role, role_spec in spec["taskRoles"].items():
        res = role_spec["resourcePerInstance"]
        ports = [
            PortRequest(label, count, begin_at.get(role, {}).get(label, 0)) for label, count in res["ports"].items()
        ]
        requests += [
            TaskRequest(role, index, res["cpu"], res["memoryMB"], res["gpu"], ports)
            for index in range(role_spec["instances"])
        ]
    return requests


def placed_env(text):
    """Load, place on two 4-GPU nodes, and build every task's environment."""
    spec = load(text).spec
    nodes = [
        NodeState(name, 16, 64 * 1024, dict.fromkeys(range(4), "V100"), gpu_total=4)
        for name in ("10.0.0.1", "10.0.0.2")
    ]
    vcs = {"default": VcState("default", Resources(8, 32, 128 * 1024), Resources())}
    result = place(nodes, vcs, [JobRequest(1, "default", task_requests(spec))])
    addresses = {(p.role, p.index): TaskAddress(p.node, p.ports, p.gpus) for p in result.placed[1]}
    ctx = RuntimeContext(spec["name"], "alice", "default", "file:///fs", "/work", "/data", "/out", "/code", addresses)
    return spec, {key: build_runtime_env(spec, ctx, *key) for key in addresses}


@pytest.mark.parametrize("text", [SEED_001, SEED_002], ids=["seed001", "seed002"])
def test_every_variable_a_seed_command_reads_is_set(text):
    spec, envs = placed_env(text)
    for (role, index), env in envs.items():
        for command in spec["taskRoles"][role]["commands"]:
            missing = {name for name in VARIABLE.findall(command) if name not in env}
            assert not missing, f"{role}-{index} lacks {missing}"


def test_seed001_hosts_lists_name_each_tasks_placed_http_port():
    _, envs = placed_env(SEED_001)
    ps_hosts = [
        f"{env['PAI_CONTAINER_HOST_IP']}:{env['PAI_CONTAINER_HOST_http_PORT_LIST']}"
        for env in (envs[("ps_server", 0)], envs[("ps_server", 1)])
    ]
    assert envs[("worker", 0)]["PAI_TASK_ROLE_ps_server_HOST_LIST"] == ",".join(ps_hosts)
    assert envs[("worker", 0)]["batch_size"] == "32"


def test_seed002_host_lists_by_role_number_match_the_named_ones():
    _, envs = placed_env(SEED_002)
    env = envs[("ps_server", 1)]
    assert env["PAI_TASK_ROLE_0_HOST_LIST"] == env["PAI_TASK_ROLE_ps_server_HOST_LIST"]
    assert env["PAI_TASK_ROLE_1_HOST_LIST"] == env["PAI_TASK_ROLE_worker_HOST_LIST"]
    assert env["PAI_TASK_ROLE_INDEX"] == "1"
    assert env["PAI_KILL_ALL_ON_COMPLETED_TASK_NUM"] == "2"


def test_each_placed_worker_sees_its_own_four_gpus_on_its_own_node():
    _, envs = placed_env(SEED_001)
    workers = [envs[("worker", 0)], envs[("worker", 1)]]
    assert [env["CUDA_VISIBLE_DEVICES"] for env in workers] == ["0,1,2,3", "0,1,2,3"]
    assert workers[0]["PAI_CONTAINER_HOST_IP"] != workers[1]["PAI_CONTAINER_HOST_IP"]
