"""The task's ssh runtime (clusters/executors/runtime/ssh.sh) in real containers."""

import asyncio
import time

import asyncssh
import pytest

from jobs.ssh import job_private_key

pytestmark = [pytest.mark.docker, pytest.mark.django_db]

BARRIER = {"com.microsoft.pai.runtimeplugin": [{"plugin": "ssh", "parameters": {"jobssh": True, "sshbarrier": True}}]}


def run_over_ssh(job, port, command):
    async def go():
        async with asyncssh.connect(
            "127.0.0.1",
            port,
            username="root",
            client_keys=[asyncssh.import_private_key(job_private_key(job))],
            known_hosts=None,
        ) as conn:
            return await conn.run(command, check=True, timeout=20)

    return asyncio.run(go()).stdout


def test_it_lets_the_job_key_in_and_sessions_see_the_pai_variables(make_job, ssh_containers):
    job = make_job(name="env-demo")
    port = ssh_containers.wait_for_sshd(ssh_containers.start(job, "worker", 0))
    assert run_over_ssh(job, port, "echo $PAI_JOB_NAME").strip() == "env-demo"


def test_it_lets_a_task_ssh_into_another_by_name(make_job, ssh_containers):
    job = make_job(roles={"worker": 2})
    worker0 = ssh_containers.start(job, "worker", 0)
    ssh_containers.wait_for_sshd(ssh_containers.start(job, "worker", 1))
    port = ssh_containers.wait_for_sshd(worker0)
    assert run_over_ssh(job, port, "ssh worker-1 hostname").strip() == "worker-1"


def test_it_gives_each_container_its_own_host_key(make_job, ssh_containers):
    job = make_job(roles={"worker": 2})
    ports = [ssh_containers.wait_for_sshd(ssh_containers.start(job, "worker", i)) for i in range(2)]
    fingerprints = {run_over_ssh(job, port, "ssh-keygen -lf /etc/ssh/ssh_host_ed25519_key.pub") for port in ports}
    assert len(fingerprints) == 2


def test_it_starts_the_command_only_after_every_sshd_answers(make_job, ssh_containers):
    job = make_job(roles={"worker": 2}, extras=BARRIER)
    worker0 = ssh_containers.start(job, "worker", 0, command="echo COMMAND-STARTED; sleep infinity")
    time.sleep(3)  # worker-1 does not exist yet: worker-0 must still wait at the barrier
    assert b"COMMAND-STARTED" not in worker0.logs()
    ssh_containers.start(job, "worker", 1)
    deadline = time.monotonic() + 20
    while b"COMMAND-STARTED" not in worker0.logs():
        assert time.monotonic() < deadline, worker0.logs().decode()
        time.sleep(0.2)
    assert b"barrier: every task answers" in worker0.logs()


def test_it_exits_249_when_the_barrier_times_out(make_job, ssh_containers):
    barrier = {
        "com.microsoft.pai.runtimeplugin": [
            {"plugin": "ssh", "parameters": {"sshbarrier": True, "sshbarrierTimeout": 0.05}}
        ]
    }
    job = make_job(roles={"worker": 2}, extras=barrier)
    worker0 = ssh_containers.start(job, "worker", 0, command="echo COMMAND-STARTED")
    result = worker0.wait(timeout=30)
    assert result["StatusCode"] == 249
    assert b"COMMAND-STARTED" not in worker0.logs()


def test_it_also_listens_on_the_tasks_allocated_ssh_port(make_job, ssh_containers):
    job = make_job()
    container = ssh_containers.start(job, "worker", 0, env={"PAI_CONTAINER_HOST_ssh_PORT_LIST": "2222"}, ssh_port=2222)
    port = ssh_containers.wait_for_sshd(container)
    assert run_over_ssh(job, port, "hostname").strip() == "worker-0"


def test_it_lets_the_owners_profile_key_in(make_job, ssh_containers, user):
    """A key added on the profile page opens every task of the user's jobs (issue 36)."""
    from accounts.ssh_keys import add_key

    own = asyncssh.generate_private_key("ssh-ed25519", comment="me@laptop")
    add_key(user, own.export_public_key("openssh").decode(), "laptop")
    job = make_job(name="profile-key")
    port = ssh_containers.wait_for_sshd(ssh_containers.start(job, "worker", 0))

    async def go():
        async with asyncssh.connect("127.0.0.1", port, username="root", client_keys=[own], known_hosts=None) as conn:
            return await conn.run("echo $PAI_JOB_NAME", check=True, timeout=20)

    assert asyncio.run(go()).stdout.strip() == "profile-key"
