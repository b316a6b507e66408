"""SSH into a job submitted through jobs.actions and run by the real scheduler on a Docker node.

Needs the scheduler to ask for an ssh port per task (jobs.ssh.ports_with_ssh) and the launch to
carry jobs.ssh.task_ssh_env / task_ssh_secret_env (jobssh key, task names, barrier)."""

import asyncio
import time
import uuid
from pathlib import Path

import asyncssh
import pytest

from clusters.models import Node
from jobs.actions import stop_job, submit_job
from jobs.models import JobState
from jobs.ssh import job_private_key, ssh_info
from tests.factories import v2_yaml

pytestmark = [pytest.mark.docker, pytest.mark.slow, pytest.mark.django_db]

SSH_PLUGIN = """extras:
  com.microsoft.pai.runtimeplugin:
    - plugin: ssh
      parameters:
        jobssh: true
        sshbarrier: true
"""
JOB = v2_yaml("ssh-e2e", "echo COMMAND-STARTED", "sleep infinity", instances=2, extra=SSH_PLUGIN)


@pytest.fixture
def scheduler_on_docker(docker_client, settings, tmp_path, monkeypatch):
    from clusters.executors.docker import MARKER_LABEL
    from clusters.executors.registry import executor_for
    from scheduling.scheduler import Scheduler

    namespace = f"paissh{uuid.uuid4().hex[:8]}"
    settings.PAI_WORK_ROOT = tmp_path / "work"
    settings.PAI_LOG_DIR = tmp_path / "logs"
    settings.PAI_FS_ROOT = tmp_path / "fs"
    settings.PAI_DOCKER_NAMESPACE = namespace
    executor_for.cache_clear()
    Node.objects.create(name="docker-local", executor="docker", address="127.0.0.1", cpus=16, memory_mb=32768)
    yield Scheduler(holder="ssh-test-scheduler")
    executor_for.cache_clear()
    for container in docker_client.containers.list(all=True, filters={"label": f"{MARKER_LABEL}={namespace}"}):
        container.remove(force=True)
    for network in docker_client.networks.list(filters={"label": f"{MARKER_LABEL}={namespace}"}):
        network.remove()


def run_over_ssh(key: str, host: str, port: int, command: str, timeout: float = 30.0) -> str:
    """Run a command in the task, retrying while its sshd is still starting."""

    async def once():
        async with asyncssh.connect(
            host, port, username="root", client_keys=[asyncssh.import_private_key(key)], known_hosts=None
        ) as conn:
            return (await conn.run(command, check=True, timeout=20)).stdout

    deadline = time.monotonic() + timeout
    while True:
        try:
            return str(asyncio.run(once()))
        except (OSError, asyncssh.Error):
            if time.monotonic() > deadline:
                raise
            time.sleep(0.3)


def test_a_two_task_job_has_sshd_jobssh_pai_variables_and_a_barrier(user, scheduler_on_docker):
    job = submit_job(user, JOB)
    deadline = time.monotonic() + 60
    while not (
        job.state == JobState.RUNNING and len(ssh_info(job)) == 2 and all(t.executor_id for t in job.tasks.all())
    ):
        assert time.monotonic() < deadline, f"job {job.state}: {job.pending_reason}"
        scheduler_on_docker.run_once()
        job.refresh_from_db()
        time.sleep(0.1)
    worker0 = next(row for row in ssh_info(job) if row["index"] == 0)
    key = job_private_key(job)
    assert worker0["ip"] == "127.0.0.1"  # the node's address: the task's ssh port is published there

    has_job_key = run_over_ssh(
        key, worker0["ip"], worker0["port"], "test -s /root/.ssh/id_ed25519 && echo yes || echo no"
    )
    assert has_job_key.strip() == "yes", "the launch lacks jobs.ssh.task_ssh_secret_env (clusters/launch.py)"
    assert run_over_ssh(key, worker0["ip"], worker0["port"], "ssh worker-1 hostname").strip() == "worker-1"
    assert run_over_ssh(key, worker0["ip"], worker0["port"], "echo $PAI_JOB_NAME").strip() == "ssh-e2e"

    log_file = Path(job.tasks.get(index=0).log_path)
    deadline = time.monotonic() + 20
    while "COMMAND-STARTED" not in log_file.read_text():
        assert time.monotonic() < deadline, log_file.read_text()
        time.sleep(0.2)
    log = log_file.read_text()
    assert log.index("barrier: every task answers") < log.index("COMMAND-STARTED")

    stop_job(job, user)
    deadline = time.monotonic() + 60
    while job.state != JobState.STOPPED:
        assert time.monotonic() < deadline, job.state
        scheduler_on_docker.run_once()
        job.refresh_from_db()
        time.sleep(0.1)
