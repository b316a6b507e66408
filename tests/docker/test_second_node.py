"""A second Docker engine is just a second node: its Node.docker_url and address are all it takes.

The second engine is a real dockerd in its own network namespace (`ip netns`), reached over
its own socket; the node's address is its end of a veth pair, where its tasks' ports are published.
"""

import os
import shutil
import signal
import socket
import subprocess
import time
import uuid

import pytest

from clusters.models import Node
from jobs.actions import submit_job
from jobs.models import JobState
from tests.conftest import require
from tests.factories import default_image, v2_yaml

pytestmark = [pytest.mark.docker, pytest.mark.django_db, pytest.mark.slow]


def sh(*args: str) -> None:
    subprocess.run(args, check=True, capture_output=True)


@pytest.fixture(scope="module")
def second_engine(docker_engine, tmp_path_factory):
    """(docker_url, address) of a dockerd in a network namespace of its own, with the base image."""
    require(os.geteuid() == 0 and bool(shutil.which("nsenter")), "root and nsenter for a second dockerd")
    tag = uuid.uuid4().hex[:6]
    netns, host_end, node_end = f"pait2{tag}", f"ph{tag}", f"pn{tag}"
    subnet = int(tag, 16) % 250
    host_ip, node_ip = f"10.254.{subnet}.1", f"10.254.{subnet}.2"
    root = tmp_path_factory.mktemp("engine2")
    sh("ip", "netns", "add", netns)
    dockerd = None
    try:
        sh("ip", "link", "add", host_end, "type", "veth", "peer", "name", node_end)
        sh("ip", "link", "set", node_end, "netns", netns)
        sh("ip", "addr", "add", f"{host_ip}/30", "dev", host_end)
        sh("ip", "link", "set", host_end, "up")
        for command in (
            ["ip", "addr", "add", f"{node_ip}/30", "dev", node_end],
            ["ip", "link", "set", node_end, "up"],
            ["ip", "link", "set", "lo", "up"],
        ):
            sh("ip", "netns", "exec", netns, *command)
        url = f"unix://{root}/docker.sock"
        log = open(root / "dockerd.log", "wb")  # noqa: SIM115 - lives as long as dockerd
        options = {"-H": url, "--data-root": root / "data", "--exec-root": root / "exec", "--pidfile": root / "pid"}
        dockerd = subprocess.Popen(
            ["nsenter", f"--net=/run/netns/{netns}", "dockerd", *(str(x) for kv in options.items() for x in kv)],
            stdout=subprocess.DEVNULL,
            stderr=log,
            start_new_session=True,
        )
        deadline = time.monotonic() + 60
        while subprocess.run(["/usr/bin/docker", "-H", url, "version"], capture_output=True).returncode != 0:
            assert dockerd.poll() is None, (root / "dockerd.log").read_text()[-2000:]
            assert time.monotonic() < deadline, "the second dockerd did not start"
            time.sleep(0.3)
        # The image travels from the first engine to the second (no registry here either).
        save = subprocess.Popen(["/usr/bin/docker", "save", default_image()], stdout=subprocess.PIPE)
        subprocess.run(["/usr/bin/docker", "-H", url, "load"], stdin=save.stdout, check=True, capture_output=True)
        assert save.wait() == 0
        yield url, node_ip
    finally:
        if dockerd is not None and dockerd.poll() is None:
            dockerd.send_signal(signal.SIGTERM)
            try:
                dockerd.wait(timeout=30)
            except subprocess.TimeoutExpired:
                dockerd.kill()
        subprocess.run(["ip", "netns", "del", netns], capture_output=True)
        shutil.rmtree(root, ignore_errors=True)


def test_a_job_runs_on_a_second_engine_with_its_ports_on_that_nodes_address(
    user, docker_node, second_engine, run_until
):
    url, address = second_engine
    Node.objects.filter(pk=docker_node.pk).update(schedulable=False)
    node2 = Node.objects.create(name="engine-2", executor="docker", docker_url=url, address=address, cpus=4)
    reply_with_hostname = 'echo "$(hostname) on engine 2" | nc -l -p $PAI_CONTAINER_HOST_http_PORT_LIST -q 1'
    text = v2_yaml("elsewhere", reply_with_hostname, ports="{http: 1}")
    job = run_until(submit_job(user, text), JobState.RUNNING)
    task = job.tasks.get()
    assert task.node_id == node2.pk
    reply = b""
    deadline = time.monotonic() + 20
    while not reply:
        try:
            with socket.create_connection((address, task.ports["http"][0]), timeout=2) as conn:
                reply = conn.recv(100)
        except OSError:
            assert time.monotonic() < deadline, "the task's port never answered on the node's address"
            time.sleep(0.2)
    assert reply == b"worker-0 on engine 2\n"
    assert run_until(job, JobState.SUCCEEDED, JobState.FAILED).state == JobState.SUCCEEDED
