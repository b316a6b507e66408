"""Authorized keys, where each task's sshd is, and what the task's ssh runtime is told."""

import asyncssh
import pytest

from clusters.models import Node
from jobs.models import TaskState
from jobs.ssh import authorized_keys_for, openpai_ssh_info, ssh_info, task_ssh_env, task_ssh_secret_env

pytestmark = pytest.mark.django_db

USER_KEY = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIUserKey me@laptop"


def run_on(task, node, ssh_port):
    task.state = TaskState.RUNNING
    task.node = node
    task.ip = "172.30.0.2"
    task.ports = {"ssh": [ssh_port]}
    task.save()


def test_it_authorizes_the_job_key(make_job):
    job = make_job()
    assert authorized_keys_for(job) == job.ssh_public_key + "\n"


def test_it_authorizes_the_configs_ssh_plugin_keys_once(make_job):
    plugin = {
        "plugin": "ssh",
        "parameters": {"userssh": {"type": "custom", "value": USER_KEY}, "publicKeys": [USER_KEY]},
    }
    job = make_job(extras={"com.microsoft.pai.runtimeplugin": [plugin]})
    assert authorized_keys_for(job).splitlines() == [job.ssh_public_key, USER_KEY]


def test_it_lists_the_published_ssh_port_and_the_exact_command(make_job, docker_node):
    job = make_job(roles={"worker": 2})
    run_on(job.tasks.get(index=1), docker_node, 30022)
    assert ssh_info(job) == [
        {
            "role": "worker",
            "index": 1,
            "state": "RUNNING",
            "ip": "127.0.0.1",
            "port": 30022,
            "command": "ssh -i ssh-demo.key -p 30022 root@127.0.0.1",
        }
    ]


def test_it_falls_back_to_the_container_address_without_a_published_port(make_job, docker_node):
    job = make_job()
    task = job.tasks.get()
    task.node, task.ip = docker_node, "172.30.0.2"
    task.save()
    assert ssh_info(job)[0]["command"] == "ssh -i ssh-demo.key -p 22 root@172.30.0.2"


def test_it_offers_no_ssh_into_plain_processes(make_job):
    job = make_job()
    node = Node.objects.create(name="proc", executor=Node.Executor.PROCESS)
    run_on(job.tasks.get(), node, 30022)
    assert ssh_info(job) == []


def test_it_offers_ssh_on_slurm_nodes_only_where_the_task_runs_in_a_container(make_job):
    job = make_job()
    node = Node.objects.create(name="s1", executor=Node.Executor.SLURM, address="10.9.0.2")
    run_on(job.tasks.get(), node, 30022)
    assert ssh_info(job) == []  # no engine: a sandboxed process in its step, no sshd of its own
    Node.objects.filter(pk=node.pk).update(docker_url="unix:///run/node-1/docker.sock")
    assert [(row["ip"], row["port"]) for row in ssh_info(job)] == [("10.9.0.2", 30022)]


def test_it_answers_openpais_ssh_api_shape(make_job, docker_node):
    job = make_job()
    run_on(job.tasks.get(), docker_node, 30022)
    info = openpai_ssh_info(job, "/jobs/alice~ssh-demo/ssh/key/")
    assert info["containers"] == [{"id": "worker-0", "sshIp": "127.0.0.1", "sshPort": "30022"}]
    assert info["keyPair"]["privateKeyFileName"] == "ssh-demo.key"
    assert info["keyPair"]["privateKeyDirectDownloadLink"] == "/jobs/alice~ssh-demo/ssh/key/"


def test_it_tells_the_runtime_the_job_hosts_and_the_barrier(make_job):
    plugin = {"plugin": "ssh", "parameters": {"sshbarrier": True, "sshbarrierTaskRoles": ["worker"]}}
    job = make_job(roles={"ps": 1, "worker": 2}, extras={"com.microsoft.pai.runtimeplugin": [plugin]})
    env = task_ssh_env(job)
    assert env["PAI_SSH_HOSTS"] == "ps-0 worker-0 worker-1"
    assert env["PAI_SSH_BARRIER"] == "1"
    assert env["PAI_SSH_BARRIER_HOSTS"] == "worker-0 worker-1"
    assert env["PAI_SSH_BARRIER_TIMEOUT"] == "1800"


def test_it_hands_the_private_key_to_the_runtime_only_with_jobssh(make_job):
    with_jobssh = make_job(name="a")
    without = make_job(name="b", extras={"com.microsoft.pai.runtimeplugin": [{"plugin": "ssh", "jobssh": False}]})
    assert task_ssh_secret_env(with_jobssh)["PAI_SSH_PRIVATE_KEY"].startswith("-----BEGIN OPENSSH PRIVATE KEY")
    assert task_ssh_secret_env(without) == {}


def test_it_authorizes_the_owners_profile_keys(make_job, user):
    from accounts.ssh_keys import add_key

    key = asyncssh.generate_private_key("ssh-ed25519").export_public_key("openssh").decode().strip()
    add_key(user, key + " laptop")
    job = make_job()
    assert authorized_keys_for(job).splitlines() == [job.ssh_public_key, key + " laptop"]
