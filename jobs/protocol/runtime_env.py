"""The runtime environment contract: every variable a task's commands may read, built from
(normalized spec, where each task landed). Pure Python; every executor uses it.

All three generations of OpenPAI's variables are set at once, so any seed's command runs
unchanged:

- seed 000 (PAI_CURRENT_TASK_ROLE_*, PAI_JOB_*, PAI_CONTAINER_HOST_*, PAI_TASK_ROLE_<name>_HOST_LIST),
- seed 001 (PAI_TASK_ROLE_*, PAI_HOST_IP_<role>_<i>, PAI_PORT_LIST_<role>_<i>_<label>, PAI_RESOURCE_<role>,
  PAI_MIN_*_TASK_COUNT_<role>; jobEnvs passed through verbatim),
- seed 002 (PAI_TASK_*, PAI_CURRENT_CONTAINER_IP/PORT, PAI_TASK_ROLE_<i>_HOST_LIST).

Formats follow OpenPAI's yarnContainerScript.mustache: a port list is `label0:p0,p1;label1:p2`; a host
list is `ip:port,...` in task-index order where the port is the task's first `http` port (the
label OpenPAI's TensorFlow examples reserve for it), else the first port of its first label;
resources are `gpu,cpu,memMB,shmMB`; a null value (e.g. minFailedTaskCount) is an empty string.
"""

from __future__ import annotations

import json
import posixpath
import re
from dataclasses import dataclass, field
from typing import Any

from jobs.protocol.launcher_env import RENDEZVOUS_LABEL, build_launcher_env, master_role
from jobs.protocol.metrics import METRICS_FILE_NAME
from jobs.protocol.spec import RUNTIME_PLUGINS, ExtrasV1, NormalizedSpec, TaskRoleSpec

DEFAULT_SHM_MB = 64
HOST_LIST_LABEL = "http"
SSH_LABEL = "ssh"
# A variable that names a task's `http` port: a host list, the task's own port, an `http` port list.
NAMES_A_TASK_PORT = re.compile(
    r"HOST_LIST|PAI_CURRENT_CONTAINER_PORT|PAI_CONTAINER_HOST_PORT|PAI_CONTAINER_HOST_http_|PAI_PORT_LIST_\w+_http\b"
)


@dataclass(frozen=True)
class TaskAddress:
    """Where one task runs: the IP others reach it at, its host ports by label, its GPU indices."""

    ip: str
    ports: dict[str, list[int]] = field(default_factory=dict)
    gpus: list[int] = field(default_factory=list)


@dataclass(frozen=True)
class RuntimeContext:
    job_name: str
    user_name: str
    vc_name: str
    default_fs_uri: str
    work_dir: str
    data_dir: str
    output_dir: str
    code_dir: str
    # (role, index) -> address, for every task of the job (a gang: all are placed together)
    addresses: dict[tuple[str, int], TaskAddress] = field(default_factory=dict)
    # Attempts of this job that a preemption ended: > 0 tells the task it resumes (PAI_JOB_RESUMED).
    preemptions: int = 0


def env_value(value: Any) -> str:
    """A config value as the container sees it: JSON spelling for booleans/null/objects."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return value
    if isinstance(value, int | float):
        return str(value)
    return json.dumps(value, separators=(",", ":"))


def undeclared_ports(spec: NormalizedSpec) -> dict[str, int]:
    """The ports a role that declares none still gets: one `http` port when the job's commands read a
    variable that names it (OpenPAI's host lists, PAI_CURRENT_CONTAINER_PORT, as seed 002's jobs do),
    else none (a port nothing listens on is a dead entry on the job page)."""
    extras = spec.get("extras") or {}
    commands = json.dumps([spec["taskRoles"], spec.get("deployments"), extras.get(RUNTIME_PLUGINS)])
    return {HOST_LIST_LABEL: 1} if NAMES_A_TASK_PORT.search(commands) else {}


def port_list(ports: dict[str, list[int]], labels: list[str]) -> str:
    """`label0:p0,p1;label1:p2` in the config's label order."""
    return ";".join(f"{label}:{_join(ports[label])}" for label in labels if label in ports)


def host_port(ports: dict[str, list[int]], labels: list[str]) -> int | None:
    """The one port a host list names for a task: its first `http` port, else its first port."""
    if ports.get(HOST_LIST_LABEL):
        return ports[HOST_LIST_LABEL][0]
    for label in labels:
        if ports.get(label):
            return ports[label][0]
    return None


def build_runtime_env(spec: NormalizedSpec, ctx: RuntimeContext, role: str, index: int) -> dict[str, str]:
    """Every runtime variable for task `index` of `role`. PAI's own variables win over jobEnvs and
    parameters of the same name, so a config cannot fake its placement; the launcher variables
    (jobs.protocol.launcher_env) lose to them, so a job's own MASTER_PORT or RANK is kept."""
    roles = spec["taskRoles"]
    v1 = (spec.get("extras") or {}).get("v1") or {}
    master = ctx.addresses.get((master_role(spec), 0)) or TaskAddress(ip="")
    env: dict[str, str] = build_launcher_env(
        spec,
        role,
        index,
        master_ip=master.ip,
        master_ports=master.ports,
        work_dir=ctx.work_dir,
    )
    for name, value in (spec.get("parameters") or {}).items():
        env[str(name)] = env_value(value)
    for name, value in (v1.get("jobEnvs") or {}).items():
        env[str(name)] = env_value(value)
    env.update(_job_env(spec, ctx, v1))
    for role_no, (name, role_spec) in enumerate(roles.items()):
        env.update(_role_env(name, role_no, role_spec, ctx))
    env.update(_current_task_env(roles, ctx, role, index))
    return env


def _job_env(spec: NormalizedSpec, ctx: RuntimeContext, v1: ExtrasV1) -> dict[str, str]:
    roles = spec["taskRoles"]
    role_list = ",".join(roles)
    task_count = str(sum(int(role_spec["instances"]) for role_spec in roles.values()))
    return {
        "PAI_WORK_DIR": ctx.work_dir,
        "PAI_DEFAULT_FS_URI": ctx.default_fs_uri,
        "PAI_JOB_NAME": ctx.job_name,
        "PAI_JOB_VC_NAME": ctx.vc_name,
        # The portal's own: a preemption ended an earlier attempt, so this one resumes its work
        # (from the checkpoint it saved in its grace period).
        "PAI_JOB_RESUMED": "true" if ctx.preemptions else "false",
        "PAI_JOB_PREEMPTIONS": str(ctx.preemptions),
        # The portal's own: JSON lines appended here are the task's training metrics (as its
        # `PAI_METRIC {...}` lines on stdout), read by the sampler.
        "PAI_METRICS_FILE": posixpath.join(ctx.work_dir, METRICS_FILE_NAME),
        # OpenPAI 1.x's names; its PAI_JOB_NAME is `user~job` too, but seed 000's is the job name.
        "PAI_FRAMEWORK_NAME": f"{ctx.user_name}~{ctx.job_name}",
        "PAI_VIRTUAL_CLUSTER": ctx.vc_name,
        "PAI_USER_NAME": ctx.user_name,
        "PAI_USERNAME": ctx.user_name,
        "PAI_DATA_DIR": ctx.data_dir,
        "PAI_OUTPUT_DIR": ctx.output_dir,
        "PAI_CODE_DIR": ctx.code_dir,
        "PAI_JOB_TASK_COUNT": task_count,
        "PAI_TASKS_NUM": task_count,
        "PAI_JOB_TASK_ROLE_COUNT": str(len(roles)),
        "PAI_TASK_ROLE_COUNT": str(len(roles)),
        "PAI_TASK_ROLES_NUM": str(len(roles)),
        "PAI_JOB_TASK_ROLE_LIST": role_list,
        "PAI_TASK_ROLE_LIST": role_list,
        "PAI_KILL_ALL_ON_COMPLETED_TASK_NUM": env_value(v1.get("killAllOnCompletedTaskNumber")),
    }


def _role_env(name: str, role_no: int, role_spec: TaskRoleSpec, ctx: RuntimeContext) -> dict[str, str]:
    """What every task knows about a role: its size, resources, completion counts and addresses."""
    labels = _labels(role_spec)
    completion = role_spec.get("completion") or {}
    env = {
        f"PAI_TASK_ROLE_TASK_COUNT_{name}": str(role_spec["instances"]),
        f"PAI_RESOURCE_{name}": _resource(role_spec),
        f"PAI_MIN_FAILED_TASK_COUNT_{name}": env_value(completion.get("minFailedInstances")),
        f"PAI_MIN_SUCCEEDED_TASK_COUNT_{name}": env_value(completion.get("minSucceededInstances")),
    }
    hosts = []
    for index in range(int(role_spec["instances"])):
        address = ctx.addresses.get((name, index))
        if address is None:
            continue
        env[f"PAI_HOST_IP_{name}_{index}"] = address.ip
        for label in _address_labels(address, labels):
            env[f"PAI_PORT_LIST_{name}_{index}_{label}"] = _join(address.ports[label])
            env[f"PAI_{name}_{index}_{label}_PORT"] = _join(address.ports[label])  # OpenPAI's older spelling
        port = host_port(address.ports, _address_labels(address, labels))
        hosts.append(address.ip if port is None else f"{address.ip}:{port}")
    env[f"PAI_TASK_ROLE_{name}_HOST_LIST"] = ",".join(hosts)
    env[f"PAI_TASK_ROLE_{role_no}_HOST_LIST"] = ",".join(hosts)
    return env


def _current_task_env(roles: dict[str, TaskRoleSpec], ctx: RuntimeContext, role: str, index: int) -> dict[str, str]:
    role_spec = roles[role]
    res = role_spec["resourcePerInstance"]
    completion = role_spec.get("completion") or {}
    address = ctx.addresses.get((role, index)) or TaskAddress(ip="")
    labels = _address_labels(address, _labels(role_spec))
    instances, cpu, memory, gpu = (str(role_spec["instances"]), str(res["cpu"]), str(res["memoryMB"]), str(res["gpu"]))
    gpus = _join(address.gpus)
    env = {
        # seed 000
        "PAI_CURRENT_TASK_ROLE_NAME": role,
        "PAI_CURRENT_TASK_ROLE_TASK_COUNT": instances,
        "PAI_CURRENT_TASK_ROLE_CPU_COUNT": cpu,
        "PAI_CURRENT_TASK_ROLE_MEM_MB": memory,
        "PAI_CURRENT_TASK_ROLE_GPU_COUNT": gpu,
        "PAI_CURRENT_TASK_ROLE_SHM_MB": str(_shm_mb(role_spec)),
        "PAI_CURRENT_TASK_ROLE_MIN_FAILED_TASK_COUNT": env_value(completion.get("minFailedInstances")),
        "PAI_CURRENT_TASK_ROLE_MIN_SUCCEEDED_TASK_COUNT": env_value(completion.get("minSucceededInstances")),
        "PAI_CURRENT_TASK_ROLE_CURRENT_TASK_INDEX": str(index),
        "PAI_TASK_INDEX": str(index),
        "PAI_CONTAINER_HOST_IP": address.ip,
        "PAI_CONTAINER_HOST_PORT_LIST": port_list(address.ports, labels),
        # seed 001
        "PAI_RESOURCE": _resource(role_spec),
        # seed 002
        "PAI_TASK_ROLE_NAME": role,
        "PAI_TASK_ROLE_NUM": instances,
        "PAI_TASK_CPU_NUM": cpu,
        "PAI_TASK_MEM_MB": memory,
        "PAI_TASK_GPU_NUM": gpu,
        "PAI_TASK_ROLE_INDEX": str(index),
        "PAI_TASK_ROLE_NO": str(list(roles).index(role)),
        "PAI_CURRENT_CONTAINER_IP": address.ip,
        # GPUs: only the allocated ones are visible (empty = none, for CUDA and the NVIDIA runtime alike)
        "NVIDIA_VISIBLE_DEVICES": gpus,
        "CUDA_VISIBLE_DEVICES": gpus,
    }
    for label in labels:
        env[f"PAI_CONTAINER_HOST_{label}_PORT_LIST"] = _join(address.ports[label])
    port = host_port(address.ports, labels)
    if port is not None:
        env["PAI_CURRENT_CONTAINER_PORT"] = str(port)
        env["PAI_CONTAINER_HOST_PORT"] = str(port)
    if address.ports.get(SSH_LABEL):
        env["PAI_CONTAINER_SSH_PORT"] = str(address.ports[SSH_LABEL][0])
    return env


def _labels(role_spec: TaskRoleSpec) -> list[str]:
    return list((role_spec["resourcePerInstance"].get("ports") or {}).keys())


def _address_labels(address: TaskAddress, spec_labels: list[str]) -> list[str]:
    """The config's labels in its order, then any other label the placement gave ports for (but
    the rendezvous port, which MASTER_PORT names: OpenPAI's port lists stay as OpenPAI made them)."""
    return [label for label in spec_labels if label in address.ports] + [
        label for label in address.ports if label not in spec_labels and label != RENDEZVOUS_LABEL
    ]


def _shm_mb(role_spec: TaskRoleSpec) -> int:
    return int((role_spec.get("extraContainerOptions") or {}).get("shmMB") or DEFAULT_SHM_MB)


def _resource(role_spec: TaskRoleSpec) -> str:
    res = role_spec["resourcePerInstance"]
    return f"{res['gpu']},{res['cpu']},{res['memoryMB']},{_shm_mb(role_spec)}"


def _join(numbers: list[int]) -> str:
    return ",".join(str(number) for number in numbers)
