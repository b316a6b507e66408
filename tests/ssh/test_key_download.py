"""A user downloads the job's key from the portal and logs into the advertised address with it."""

import asyncio

import asyncssh
import pytest
from django.urls import reverse

from tests.ssh.websocket import communicator, session_cookie, socket_path

pytestmark = [pytest.mark.docker, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def running_job(make_job, ssh_containers, docker_node):
    job = make_job(name="keyed")
    ssh_containers.record_running(job, "worker", 0, ssh_containers.start(job, "worker", 0), docker_node)
    return job


def test_the_owner_downloads_the_key_and_connects_to_the_advertised_address(client, user, running_job):
    client.force_login(user)
    info = client.get(reverse("jobs_ssh:info", args=[running_job.full_name])).json()
    key_text = client.get(info["keyUrl"]).content.decode()
    task = info["tasks"][0]
    assert task["command"] == f"ssh -i keyed.key -p {task['port']} root@{task['ip']}"

    async def run():
        async with asyncssh.connect(
            task["ip"],
            task["port"],
            username="root",
            client_keys=[asyncssh.import_private_key(key_text)],
            known_hosts=None,
        ) as conn:
            return await conn.run("echo $PAI_JOB_NAME on $(hostname)", check=True, timeout=20)

    assert asyncio.run(run()).stdout.strip() == "keyed on worker-0"


def test_another_user_gets_404_for_the_key_the_ssh_info_and_the_websocket(client, other_user, running_job):
    client.force_login(other_user)
    assert client.get(reverse("jobs_ssh:key", args=[running_job.full_name])).status_code == 404
    assert client.get(reverse("jobs_ssh:info", args=[running_job.full_name])).status_code == 404

    cookie = session_cookie(other_user)

    async def handshake():
        comm = communicator(socket_path(running_job), cookie=cookie)
        return await comm.connect(timeout=5)

    assert asyncio.run(handshake()) == (False, 4404)
