"""Turns a job's spec and a task's placement into the executor's TaskLaunch.

Part of the scheduler loop: it reads what the models hold and hands plain values to the protocol
(runtime environment, task script) and to the executor.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from accounts.permissions import is_admin
from clusters import job_files
from clusters.executors.base import TaskLaunch
from jobs.interactive import app_secret_env
from jobs.models import Job, Task
from jobs.protocol import task_script
from jobs.protocol.interactive import declared_apps
from jobs.protocol.runtime_env import RuntimeContext, TaskAddress, build_runtime_env
from jobs.protocol.spec import NormalizedSpec, RegistryAuth
from jobs.ssh import authorized_keys_for, host_network_ssh_env, task_ssh_env, task_ssh_secret_env
from jobs.storage import areas as storage
from jobs.storage.configs import task_mounts

DEFAULT_SHM_MB = 64


def is_debug(spec: NormalizedSpec) -> bool:
    """v1 jobEnvs.isDebug (or v2 extras.isDebug): keep failed containers for inspection."""
    extras = spec.get("extras") or {}
    value = ((extras.get("v1") or {}).get("jobEnvs") or {}).get("isDebug", extras.get("isDebug", False))
    return str(value).lower() in {"true", "1", "yes"}


def image_of(spec: NormalizedSpec, role: str) -> tuple[str, RegistryAuth | None]:
    """The role's image URI and its registry auth block, from the dockerimage prerequisite."""
    name = spec["taskRoles"][role]["dockerImage"]
    for prerequisite in spec.get("prerequisites") or []:
        if prerequisite.get("type") == "dockerimage" and prerequisite.get("name") == name:
            return str(prerequisite["uri"]), prerequisite.get("auth")  # a dockerimage's uri is one str
    return name, None


def render_secret(value: str, secrets: dict[str, str]) -> str:
    for key, secret in secrets.items():
        value = value.replace(f"<% $secrets.{key} %>", secret)
    return value


def log_path_for(job: Job, task: Task) -> Path:
    return job_files.task_log(job.pk, job.job_attempt, task.role, task.index, task.attempt)


DOCKER_WORK_DIR = "/pai/work"


def spans_nodes(tasks: Iterable[Task]) -> bool:
    """Whether the job's tasks sit on more than one node: then they run on the nodes' own networks
    (docs/architecture.md, "Networks")."""
    return len({task.node_id for task in tasks if task.node_id is not None}) > 1


def build_launch(job: Job, task: Task, everyone: list[Task], secrets: dict[str, str]) -> TaskLaunch:
    """Raises storage.StorageError when a storage path went bad since submit (a clear job error)."""
    spec = job.normalized
    role_spec = spec["taskRoles"][task.role]
    res = role_spec["resourcePerInstance"]
    user = job.owner.get_username()
    host_work_dir = job_files.task_work_dir(job.pk, task.role, task.index)
    # Inside a container the work dir is fixed; a process task works in its host directory.
    node = task.node
    in_container = node is not None and node.runs_containers
    work_dir = DOCKER_WORK_DIR if in_container else str(host_work_dir)
    paths = storage.job_paths(spec)
    context = RuntimeContext(
        job_name=spec["name"],
        user_name=user,
        vc_name=job.virtual_cluster.name,
        default_fs_uri=storage.default_fs_uri(user),
        work_dir=work_dir,
        data_dir=storage.expand_uri(user, paths.get("dataDir", "")),
        output_dir=storage.expand_uri(user, paths.get("outputDir", "")),
        code_dir=storage.expand_uri(user, paths.get("codeDir", "")),
        addresses={(t.role, t.index): TaskAddress(ip=t.ip, ports=t.ports, gpus=t.gpus) for t in everyone},
        preemptions=job.preemptions,
    )
    code_copy = host_work_dir / "code" if not in_container else host_work_dir.with_name(host_work_dir.name + "-code")
    mounts = storage.launch_mounts(user, spec, code_copy, work_dir) + task_mounts(job.owner, spec)
    # A Slurm step found its ports free on the node itself: its container takes them there.
    host_network = in_container and (spans_nodes(everyone) or (node is not None and node.executor == "slurm"))
    env = {**build_runtime_env(spec, context, task.role, task.index), **task_ssh_env(job)}
    if host_network or not in_container:  # (a process task's sshd listens on its `ssh` port too)
        env.update(host_network_ssh_env(task, everyone))
    image, auth = image_of(spec, task.role)
    registry_auth = None
    if auth:
        registry_auth = {
            "username": render_secret(str(auth.get("username", "")), secrets),
            "password": render_secret(str(auth.get("password", "")), secrets),
            "registry": render_secret(str(auth.get("registryuri", "")), secrets),
        }
    elif paths.get("authFile"):
        registry_auth = storage.read_auth_file(user, paths["authFile"])
    apps = app_endpoints(spec, everyone)
    return TaskLaunch(
        job_id=job.pk,
        job_name=job.full_name,
        job_attempt=job.job_attempt,
        role=task.role,
        index=task.index,
        task_attempt=task.attempt,
        image=image,
        command=task_script(spec, task.role, secrets),
        env=env,
        cpu=res["cpu"],
        memory_mb=res["memoryMB"],
        shm_mb=(role_spec.get("extraContainerOptions") or {}).get("shmMB", DEFAULT_SHM_MB),
        gpus=list(task.gpus),
        ports=dict(task.ports),
        log_path=log_path_for(job, task),
        work_dir=host_work_dir,
        ip=task.ip,
        mounts=mounts,
        registry_auth=registry_auth,
        keep_on_failure=is_debug(spec),
        ssh_authorized_keys=authorized_keys_for(job) or None,
        secret_env=task_ssh_secret_env(job) | app_secret_env(job, task),
        host_network=host_network,
        # Every job-mate's /etc/hosts line, known before any starts (Docker's DNS on a job network
        # names a container only once it runs: a task's first line would miss a late job-mate).
        extra_hosts={f"{t.role}-{t.index}": t.ip for t in everyone if t.ip},
        work_dir_aliases=[]
        if in_container
        else [str(host_work_dir.with_name(f"{t.role}-{t.index}")) for t in everyone if t.pk != task.pk],
        owner_is_admin=is_admin(job.owner),
        owner_id=job.owner_id,
        infiniband=bool((role_spec.get("extraContainerOptions") or {}).get("infiniband")),
        app_ports=[port for served, port in apps if served.pk == task.pk],
        job_app_endpoints=[(served.ip, port) for served, port in apps if served.ip],
    )


def app_endpoints(spec: NormalizedSpec, everyone: list[Task]) -> list[tuple[Task, int]]:
    """Each port of the job's apps, with the task that serves it (its role's first)."""
    first = {t.role: t for t in everyone if t.index == 0}
    return [
        (first[app.role], int(port))
        for app in declared_apps(spec)
        if app.role in first
        for port in (first[app.role].ports or {}).get(app.port_label) or []
    ]
