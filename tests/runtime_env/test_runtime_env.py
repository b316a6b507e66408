"""The runtime environment contract, checked on the seeds' own examples with exact values.

Specs are literal dicts in the normalized shape of docs/contracts.md, as jobs.protocol.load()
produces them for the seeds' configs.
"""

import pytest

from jobs.protocol.runtime_env import RuntimeContext, TaskAddress, build_runtime_env


def tf_role(instances, memory_mb, gpu, ports=None, completion=None):
    return {
        "instances": instances,
        "completion": completion or {"minFailedInstances": 1, "minSucceededInstances": None},
        "taskRetryCount": 0,
        "dockerImage": "image",
        "resourcePerInstance": {"cpu": 2, "memoryMB": memory_mb, "gpu": gpu, "ports": ports or {}},
        "extraContainerOptions": {"shmMB": 64},
        "commands": ["python code/tf_cnn_benchmarks.py"],
    }


@pytest.fixture
def seed000_spec():
    """Seed 000's distributed TensorFlow job: 2 ps servers, 2 workers with 4 GPUs, http + ssh ports."""
    ports = {"http": 1, "ssh": 1}
    return {
        "protocolVersion": 2,
        "name": "tensorflow-distributed-jobguid",
        "type": "job",
        "jobRetryCount": 0,
        "prerequisites": [{"name": "image", "type": "dockerimage", "uri": "your_docker_registry/pai.run.tensorflow"}],
        "parameters": {},
        "secrets": {},
        "defaults": {"virtualCluster": "your_virtual_cluster"},
        "taskRoles": {
            "ps_server": tf_role(2, 8192, 0, ports),
            "worker": tf_role(2, 16384, 4, ports),
        },
        "extras": {
            "v1": {
                "jobEnvs": {},
                "killAllOnCompletedTaskNumber": 2,
                "dataDir": "$PAI_DEFAULT_FS_URI/path/tensorflow-distributed-jobguid/data",
            }
        },
    }


@pytest.fixture
def seed000_ctx():
    return RuntimeContext(
        job_name="tensorflow-distributed-jobguid",
        user_name="alice",
        vc_name="your_virtual_cluster",
        default_fs_uri="file:///srv/pai/fs",
        work_dir="/pai/work",
        data_dir="/pai/data",
        output_dir="/pai/output",
        code_dir="/pai/code",
        addresses={
            ("ps_server", 0): TaskAddress("10.0.0.1", {"http": [20000], "ssh": [20001]}, []),
            ("ps_server", 1): TaskAddress("10.0.0.2", {"http": [20002], "ssh": [20003]}, []),
            ("worker", 0): TaskAddress("10.0.0.3", {"http": [21000], "ssh": [21001]}, [0, 1, 2, 3]),
            ("worker", 1): TaskAddress("10.0.0.3", {"http": [21002], "ssh": [21003]}, [4, 5, 6, 7]),
        },
    )


@pytest.fixture
def worker1_env(seed000_spec, seed000_ctx):
    return build_runtime_env(seed000_spec, seed000_ctx, "worker", 1)


def test_it_sets_openpai_1x_framework_name_and_virtual_cluster_beside_the_seeds_job_name(worker1_env):
    assert worker1_env["PAI_FRAMEWORK_NAME"] == "alice~tensorflow-distributed-jobguid"
    assert worker1_env["PAI_VIRTUAL_CLUSTER"] == "your_virtual_cluster"
    assert worker1_env["PAI_JOB_NAME"] == "tensorflow-distributed-jobguid"


def test_it_tells_every_task_where_its_metrics_file_is(worker1_env):
    assert worker1_env["PAI_METRICS_FILE"] == "/pai/work/pai-metrics.jsonl"


def test_it_sets_seed000_job_level_variables(worker1_env):
    assert worker1_env["PAI_WORK_DIR"] == "/pai/work"
    assert worker1_env["PAI_DEFAULT_FS_URI"] == "file:///srv/pai/fs"
    assert worker1_env["PAI_JOB_NAME"] == "tensorflow-distributed-jobguid"
    assert worker1_env["PAI_JOB_VC_NAME"] == "your_virtual_cluster"
    assert worker1_env["PAI_USER_NAME"] == "alice"
    assert worker1_env["PAI_DATA_DIR"] == "/pai/data"
    assert worker1_env["PAI_OUTPUT_DIR"] == "/pai/output"
    assert worker1_env["PAI_CODE_DIR"] == "/pai/code"
    assert worker1_env["PAI_JOB_TASK_COUNT"] == "4"
    assert worker1_env["PAI_JOB_TASK_ROLE_COUNT"] == "2"
    assert worker1_env["PAI_JOB_TASK_ROLE_LIST"] == "ps_server,worker"
    assert worker1_env["PAI_KILL_ALL_ON_COMPLETED_TASK_NUM"] == "2"


def test_it_sets_seed000_current_task_role_variables(worker1_env):
    assert worker1_env["PAI_CURRENT_TASK_ROLE_NAME"] == "worker"
    assert worker1_env["PAI_CURRENT_TASK_ROLE_TASK_COUNT"] == "2"
    assert worker1_env["PAI_CURRENT_TASK_ROLE_CPU_COUNT"] == "2"
    assert worker1_env["PAI_CURRENT_TASK_ROLE_MEM_MB"] == "16384"
    assert worker1_env["PAI_CURRENT_TASK_ROLE_GPU_COUNT"] == "4"
    assert worker1_env["PAI_CURRENT_TASK_ROLE_CURRENT_TASK_INDEX"] == "1"


def test_it_sets_the_container_host_ip_and_port_lists_in_seed000_format(worker1_env):
    assert worker1_env["PAI_CONTAINER_HOST_IP"] == "10.0.0.3"
    assert worker1_env["PAI_CONTAINER_HOST_PORT_LIST"] == "http:21002;ssh:21003"
    assert worker1_env["PAI_CONTAINER_HOST_http_PORT_LIST"] == "21002"
    assert worker1_env["PAI_CONTAINER_HOST_ssh_PORT_LIST"] == "21003"


def test_it_lists_each_roles_hosts_by_task_index_with_their_http_port(worker1_env):
    """The seed's command passes these as --ps_hosts / --worker_hosts."""
    assert worker1_env["PAI_TASK_ROLE_ps_server_HOST_LIST"] == "10.0.0.1:20000,10.0.0.2:20002"
    assert worker1_env["PAI_TASK_ROLE_worker_HOST_LIST"] == "10.0.0.3:21000,10.0.0.3:21002"


def test_it_sorts_a_host_list_by_task_index_not_by_address_order(seed000_spec, seed000_ctx):
    shuffled = dict(reversed(list(seed000_ctx.addresses.items())))
    ctx = RuntimeContext(**{**seed000_ctx.__dict__, "addresses": shuffled})
    env = build_runtime_env(seed000_spec, ctx, "ps_server", 0)
    assert env["PAI_TASK_ROLE_ps_server_HOST_LIST"] == "10.0.0.1:20000,10.0.0.2:20002"


def test_it_sets_seed001_task_role_variables(worker1_env):
    assert worker1_env["PAI_TASK_ROLE_COUNT"] == "2"
    assert worker1_env["PAI_TASK_ROLE_LIST"] == "ps_server,worker"
    assert worker1_env["PAI_TASK_ROLE_TASK_COUNT_ps_server"] == "2"
    assert worker1_env["PAI_TASK_ROLE_TASK_COUNT_worker"] == "2"
    assert worker1_env["PAI_HOST_IP_ps_server_1"] == "10.0.0.2"
    assert worker1_env["PAI_HOST_IP_worker_0"] == "10.0.0.3"
    assert worker1_env["PAI_PORT_LIST_ps_server_1_http"] == "20002"
    assert worker1_env["PAI_PORT_LIST_worker_0_ssh"] == "21001"


def test_it_formats_role_resources_as_gpu_cpu_mem_shm(worker1_env):
    assert worker1_env["PAI_RESOURCE_ps_server"] == "0,2,8192,64"
    assert worker1_env["PAI_RESOURCE_worker"] == "4,2,16384,64"


def test_it_sets_seed002_variables(worker1_env):
    assert worker1_env["PAI_TASK_ROLE_NAME"] == "worker"
    assert worker1_env["PAI_TASK_ROLE_NUM"] == "2"
    assert worker1_env["PAI_TASK_CPU_NUM"] == "2"
    assert worker1_env["PAI_TASK_MEM_MB"] == "16384"
    assert worker1_env["PAI_TASK_GPU_NUM"] == "4"
    assert worker1_env["PAI_TASK_ROLE_INDEX"] == "1"
    assert worker1_env["PAI_TASK_ROLE_NO"] == "1"
    assert worker1_env["PAI_TASKS_NUM"] == "4"
    assert worker1_env["PAI_TASK_ROLES_NUM"] == "2"
    assert worker1_env["PAI_CURRENT_CONTAINER_IP"] == "10.0.0.3"
    assert worker1_env["PAI_CURRENT_CONTAINER_PORT"] == "21002"


def test_it_numbers_seed002_host_lists_by_role_position(worker1_env):
    assert worker1_env["PAI_TASK_ROLE_0_HOST_LIST"] == "10.0.0.1:20000,10.0.0.2:20002"
    assert worker1_env["PAI_TASK_ROLE_1_HOST_LIST"] == "10.0.0.3:21000,10.0.0.3:21002"


def test_it_shows_the_task_only_its_own_gpus(worker1_env):
    assert worker1_env["NVIDIA_VISIBLE_DEVICES"] == "4,5,6,7"
    assert worker1_env["CUDA_VISIBLE_DEVICES"] == "4,5,6,7"


def test_it_hides_every_gpu_from_a_cpu_only_task(seed000_spec, seed000_ctx):
    env = build_runtime_env(seed000_spec, seed000_ctx, "ps_server", 0)
    assert env["NVIDIA_VISIBLE_DEVICES"] == ""
    assert env["CUDA_VISIBLE_DEVICES"] == ""


def test_it_returns_only_strings(worker1_env):
    assert all(isinstance(key, str) and isinstance(value, str) for key, value in worker1_env.items())


# ---- seed 001: jobEnvs, completion counts, shm ---------------------------------------------


@pytest.fixture
def seed001_spec(seed000_spec):
    """Seed 001's example: no killAll, worker minSucceededTaskCount 2, jobEnvs batch_size/job_model."""
    spec = seed000_spec
    spec["taskRoles"]["worker"]["completion"] = {"minFailedInstances": 1, "minSucceededInstances": 2}
    spec["extras"]["v1"] = {
        "jobEnvs": {"batch_size": 32, "job_model": "resnet20"},
        "killAllOnCompletedTaskNumber": None,
    }
    return spec


def test_it_passes_job_envs_through_verbatim(seed001_spec, seed000_ctx):
    env = build_runtime_env(seed001_spec, seed000_ctx, "worker", 0)
    assert env["batch_size"] == "32"
    assert env["job_model"] == "resnet20"


def test_it_does_not_substitute_inside_job_envs(seed001_spec, seed000_ctx):
    seed001_spec["extras"]["v1"]["jobEnvs"]["where"] = "$PAI_DATA_DIR/x"
    assert build_runtime_env(seed001_spec, seed000_ctx, "worker", 0)["where"] == "$PAI_DATA_DIR/x"


def test_it_spells_boolean_job_envs_as_json_does(seed001_spec, seed000_ctx):
    seed001_spec["extras"]["v1"]["jobEnvs"]["isDebug"] = True
    assert build_runtime_env(seed001_spec, seed000_ctx, "worker", 0)["isDebug"] == "true"


def test_it_does_not_let_job_envs_override_pai_variables(seed001_spec, seed000_ctx):
    seed001_spec["extras"]["v1"]["jobEnvs"]["PAI_CONTAINER_HOST_IP"] = "6.6.6.6"
    assert build_runtime_env(seed001_spec, seed000_ctx, "worker", 0)["PAI_CONTAINER_HOST_IP"] == "10.0.0.3"


def test_it_sets_min_task_counts_per_role_and_leaves_null_empty(seed001_spec, seed000_ctx):
    env = build_runtime_env(seed001_spec, seed000_ctx, "ps_server", 0)
    assert env["PAI_MIN_FAILED_TASK_COUNT_worker"] == "1"
    assert env["PAI_MIN_SUCCEEDED_TASK_COUNT_worker"] == "2"
    assert env["PAI_MIN_SUCCEEDED_TASK_COUNT_ps_server"] == ""
    assert env["PAI_KILL_ALL_ON_COMPLETED_TASK_NUM"] == ""


def test_it_uses_the_roles_shm_in_the_resource_variable(seed001_spec, seed000_ctx):
    seed001_spec["taskRoles"]["worker"]["extraContainerOptions"] = {"shmMB": 512}
    assert build_runtime_env(seed001_spec, seed000_ctx, "ps_server", 0)["PAI_RESOURCE_worker"] == "4,2,16384,512"


def test_it_defaults_shm_to_64_mb(seed001_spec, seed000_ctx):
    del seed001_spec["taskRoles"]["worker"]["extraContainerOptions"]
    assert build_runtime_env(seed001_spec, seed000_ctx, "worker", 0)["PAI_RESOURCE_worker"] == "4,2,16384,64"


# ---- seed 002 and v2 -------------------------------------------------------------------------


@pytest.fixture
def seed002_spec(seed000_spec):
    """Seed 002's example: the same roles, no portList."""
    for role in seed000_spec["taskRoles"].values():
        role["resourcePerInstance"]["ports"] = {}
    return seed000_spec


def test_it_lists_bare_ips_when_tasks_have_no_ports(seed002_spec, seed000_ctx):
    addresses = {key: TaskAddress(address.ip, {}, address.gpus) for key, address in seed000_ctx.addresses.items()}
    ctx = RuntimeContext(**{**seed000_ctx.__dict__, "addresses": addresses})
    env = build_runtime_env(seed002_spec, ctx, "worker", 0)
    assert env["PAI_TASK_ROLE_0_HOST_LIST"] == "10.0.0.1,10.0.0.2"
    assert env["PAI_CONTAINER_HOST_PORT_LIST"] == ""
    assert "PAI_CURRENT_CONTAINER_PORT" not in env


def test_it_uses_the_first_port_of_the_first_label_when_there_is_no_http_label(seed000_spec, seed000_ctx):
    for role in seed000_spec["taskRoles"].values():
        role["resourcePerInstance"]["ports"] = {"grpc": 2}
    addresses = dict(seed000_ctx.addresses)
    addresses[("ps_server", 0)] = TaskAddress("10.0.0.1", {"grpc": [30000, 30001]}, [])
    addresses[("ps_server", 1)] = TaskAddress("10.0.0.2", {"grpc": [30002, 30003]}, [])
    ctx = RuntimeContext(**{**seed000_ctx.__dict__, "addresses": addresses})
    env = build_runtime_env(seed000_spec, ctx, "ps_server", 0)
    assert env["PAI_TASK_ROLE_ps_server_HOST_LIST"] == "10.0.0.1:30000,10.0.0.2:30002"
    assert env["PAI_CONTAINER_HOST_grpc_PORT_LIST"] == "30000,30001"
    assert env["PAI_PORT_LIST_ps_server_1_grpc"] == "30002,30003"


def test_it_exports_v2_parameters(seed000_spec, seed000_ctx):
    seed000_spec["parameters"] = {"stepNum": 200, "lr": 0.01}
    env = build_runtime_env(seed000_spec, seed000_ctx, "worker", 0)
    assert (env["stepNum"], env["lr"]) == ("200", "0.01")


def test_it_sets_the_ssh_port_for_the_ssh_label(worker1_env):
    assert worker1_env["PAI_CONTAINER_SSH_PORT"] == "21003"


def test_it_uses_a_port_the_scheduler_gave_a_role_without_port_list(seed002_spec, seed000_ctx):
    """Seed 002's generation gave every container one port; a scheduler may do the same under "http"."""
    addresses = {key: TaskAddress(a.ip, {"http": a.ports["http"]}, a.gpus) for key, a in seed000_ctx.addresses.items()}
    ctx = RuntimeContext(**{**seed000_ctx.__dict__, "addresses": addresses})
    env = build_runtime_env(seed002_spec, ctx, "worker", 1)
    assert env["PAI_CURRENT_CONTAINER_PORT"] == "21002"
    assert env["PAI_TASK_ROLE_0_HOST_LIST"] == "10.0.0.1:20000,10.0.0.2:20002"
    assert env["PAI_CONTAINER_HOST_PORT_LIST"] == "http:21002"
