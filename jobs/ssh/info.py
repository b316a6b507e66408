"""Who may log into a job's tasks, where each task's sshd is, and what the executor passes to
the task's ssh runtime (clusters/executors/runtime/ssh.sh)."""

from __future__ import annotations

from typing import Any, TypedDict

from accounts.ssh_keys import public_key_lines
from jobs.models import Job, Task, TaskState
from jobs.ssh.keys import job_private_key, key_filename
from jobs.ssh.plugin import SSH_PORT_LABEL, ssh_settings, task_aliases

# The host port published for the task's sshd is recorded under SSH_PORT_LABEL in Task.ports (the
# label OpenPAI v1 configs use for their ssh port); without one, the container's own sshd port.
CONTAINER_SSH_PORT = 22


class TaskSshInfo(TypedDict):
    role: str
    index: int
    state: str
    ip: str
    port: int
    command: str


def authorized_keys_for(job: Job) -> str:
    """authorized_keys for every task: the job's key, the owner's profile keys (as they are when
    the task starts), the config's ssh plugin keys."""
    keys = [job.ssh_public_key.strip()] if job.ssh_public_key.strip() else []
    keys += public_key_lines(job.owner)
    keys += ssh_settings(job.normalized).public_keys
    unique = list(dict.fromkeys(keys))
    return "".join(f"{key}\n" for key in unique)


def ssh_endpoint(task: Task) -> tuple[str, int] | None:
    """(host, port) where the task's sshd answers from the portal's side, None if it has none."""
    node = task.node
    if node is not None and not node.runs_containers:
        return None  # a plain process shares the node: there is no sshd of the job's own
    published = (task.ports or {}).get(SSH_PORT_LABEL) or []
    if node is not None and published:
        return node.address, int(published[0])
    if task.ip:
        return task.ip, CONTAINER_SSH_PORT
    return None


def connect_command(job: Job, host: str, port: int) -> str:
    return f"ssh -i {key_filename(job)} -p {port} root@{host}"


def ssh_info(job: Job) -> list[TaskSshInfo]:
    """Per task with an sshd: where to connect and the exact command (tasks in role/index order)."""
    rows: list[TaskSshInfo] = []
    for task in job.tasks.select_related("node").order_by("role", "index"):
        endpoint = ssh_endpoint(task)
        if endpoint is None:
            continue
        host, port = endpoint
        rows.append(
            TaskSshInfo(
                role=task.role,
                index=task.index,
                state=task.state,
                ip=host,
                port=port,
                command=connect_command(job, host, port),
            )
        )
    return rows


def openpai_ssh_info(job: Job, key_url: str) -> dict[str, Any]:
    """OpenPAI's `GET /api/v1/jobs/:jobName/ssh` shape, for the REST API."""
    return {
        "containers": [
            {"id": f"{row['role']}-{row['index']}", "sshIp": row["ip"], "sshPort": str(row["port"])}
            for row in ssh_info(job)
            if row["state"] == TaskState.RUNNING
        ],
        "keyPair": {
            "folderPath": "",
            "publicKeyFileName": f"{job.name}.pub",
            "privateKeyFileName": key_filename(job),
            "privateKeyDirectDownloadLink": key_url,
        },
    }


def task_ssh_env(job: Job) -> dict[str, str]:
    """What ssh.sh reads (besides the keys): the job's task names, jobssh and the barrier."""
    settings = ssh_settings(job.normalized)
    env = {
        "PAI_SSH_HOSTS": " ".join(task_aliases(job.normalized)),
        "PAI_SSH_JOBSSH": "1" if settings.jobssh else "0",
        "PAI_SSH_BARRIER": "1" if settings.sshbarrier else "0",
        "PAI_SSH_BARRIER_TIMEOUT": str(settings.barrier_timeout_s),
    }
    if settings.sshbarrier:
        env["PAI_SSH_BARRIER_HOSTS"] = " ".join(task_aliases(job.normalized, settings.barrier_roles))
    return env


def host_network_ssh_env(task: Task, everyone: list[Task]) -> dict[str, str]:
    """For a task on its node's own network (a job that spans nodes), where port 22 is the node's:
    its sshd listens on the task's `ssh` port only, and jobssh / sshbarrier reach each job-mate at
    that one's `ssh` port (`worker-0:20001 worker-1:20001`)."""
    peers = " ".join(
        f"{peer.role}-{peer.index}:{ports[0]}"
        for peer in sorted(everyone, key=lambda t: (t.role, t.index))
        if (ports := (peer.ports or {}).get(SSH_PORT_LABEL))
    )
    env = {"PAI_SSH_HOST_PORTS": peers}
    own = (task.ports or {}).get(SSH_PORT_LABEL)
    if own:
        env["PAI_SSH_PORT"] = str(own[0])
    return env


def task_ssh_secret_env(job: Job) -> dict[str, str]:
    """The secret half, for TaskLaunch.secret_env: the job's private key when jobssh is on.
    (The authorized keys travel in TaskLaunch.ssh_authorized_keys.)"""
    private_key = job_private_key(job)
    if not private_key or not ssh_settings(job.normalized).jobssh:
        return {}
    return {"PAI_SSH_PRIVATE_KEY": private_key}
