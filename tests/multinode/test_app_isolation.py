"""An interactive app's port is open to its own job's tasks and the portal's proxy, and to no other
user's task (issue 44, item 6): bob's `http` app, a real server in a real task of the portal's own
machine (a process node, then a Docker node on the portal's engine), while alice's real tasks try to
read it on the same machine (a process task, a container) and from another node of the dev cluster
(a container there). The nodes of the portal's machine are registered at the dev cluster's bridge
address, which the other nodes reach, as any cluster's nodes reach each other.

Each job is pinned to its node by cordoning the others while it is placed. Before the change, every
one of alice's tasks read bob's file from `<node address>:<port>`."""

from __future__ import annotations

import json
import secrets
import shutil
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import docker
import pytest

from clusters.executors.registry import executor_for
from clusters.models import Node
from jobs.actions import submit_job
from jobs.models import InteractiveApp, Job, JobState
from jobs.states import FINISHED_JOB_STATES
from scheduling.scheduler import Scheduler
from tests.apps.conftest import browser_at  # noqa: F401  (a fixture)
from tests.docker.conftest import remove_namespace
from tests.factories import default_image, v2_yaml
from tests.multinode.conftest import DevCluster

pytestmark = [pytest.mark.docker, pytest.mark.slow]

# Reads each URL: READ <what it got>, or NO.
READ_ONE = 'import sys, urllib.request as r; print("READ", r.urlopen(sys.argv[1], timeout=4).read().decode().strip())'


def reads(*urls: str) -> str:
    return f"for url in {' '.join(urls)}; do python3 -c '{READ_ONE}' \"$url\" 2>/dev/null || echo NO; done"


@dataclass
class Cluster:
    host_address: str  # the portal's machine on the dev cluster's bridge
    nodes: dict[str, Node]  # process, docker (the portal's engine), remote-1, remote-2
    scheduler: Scheduler

    def run_on(self, node: str, job: Job, *states: str, timeout: float = 120.0) -> Job:
        """Place the job on that node alone (the others cordoned meanwhile); scheduler passes until
        it is in one of `states`."""
        Node.objects.update(schedulable=False)
        Node.objects.filter(pk=self.nodes[node].pk).update(schedulable=True)
        deadline = time.monotonic() + timeout
        while True:
            self.scheduler.run_once()
            job.refresh_from_db()
            if job.state in states:
                Node.objects.update(schedulable=True)
                return job
            assert time.monotonic() < deadline, f"job stayed {job.state}: {job.pending_reason}"
            time.sleep(0.1)


@pytest.fixture
def tmp_path() -> Iterator[Path]:
    """The portal's folders outside /tmp/pytest-of-<user> (whose o+x each new pytest session takes
    away): the sandbox uid must pass through the folders above a process task's mounts."""
    path = Path(tempfile.mkdtemp(prefix="pai-apps-"))
    yield path
    shutil.rmtree(path, ignore_errors=True)


@pytest.fixture
def cluster(dev_cluster: DevCluster, transactional_db, default_vc, settings, tmp_path, namespace) -> Iterator[Cluster]:
    settings.PAI_WORK_ROOT = tmp_path / "work"
    settings.PAI_LOG_DIR = tmp_path / "logs"
    settings.PAI_FS_ROOT = tmp_path / "fs"
    settings.PAI_DOCKER_NAMESPACE = namespace
    executor_for.cache_clear()
    host = dev_cluster.engines[0].address.rsplit(".", 1)[0] + ".1"
    room = {"cpus": 16, "memory_mb": 32768}  # (the VC's quota counts the schedulable nodes alone)
    nodes = {
        "process": Node.objects.create(name="host-process", executor="process", address=host, **room),
        "docker": Node.objects.create(name="host-docker", executor="docker", address=host, **room),
    }
    for engine in dev_cluster.engines:
        nodes[f"remote-{engine.index}"] = Node.objects.create(
            name=engine.name, executor="docker", docker_url=engine.docker_url, address=engine.address, **room
        )
    yield Cluster(host, nodes, Scheduler(holder="app-isolation-test"))
    for node in nodes.values():
        for task in executor_for(node.executor, node.address, node.docker_url).list_running():
            executor_for(node.executor, node.address, node.docker_url).stop(task.handle)
    executor_for.cache_clear()
    remove_namespace(docker.APIClient(timeout=60), namespace)
    for engine in dev_cluster.engines:
        remove_namespace(docker.APIClient(base_url=engine.docker_url, timeout=60), namespace)


def bobs_app_job(secret: str) -> str:
    """bob's app (an `http` port of role main) and a job-mate that reads it as any task port."""
    serve = f"echo {secret} > bob.txt && exec python3 -m http.server $PAI_CONTAINER_HOST_web_PORT_LIST"
    url = "http://$PAI_HOST_IP_main_0:$PAI_PORT_LIST_main_0_web/bob.txt"
    read = f"for _ in $(seq 90); do {reads(url)} | grep READ && break; sleep 1; done; sleep 600"
    return f"""protocolVersion: 2
name: bobs-app
type: job
prerequisites:
  - {{name: image, type: dockerimage, uri: {default_image()}}}
taskRoles:
  main:
    instances: 1
    dockerImage: image
    resourcePerInstance: {{cpu: 1, memoryMB: 256, gpu: 0, ports: {{web: 1}}}}
    commands:
      - |
        {serve}
  mate:
    instances: 1
    dockerImage: image
    resourcePerInstance: {{cpu: 1, memoryMB: 256, gpu: 0}}
    commands:
      - |
        {read}
extras:
  com.microsoft.pai.runtimeplugin:
    - plugin: http
      parameters: {{port: web}}
"""


def attack_job(name: str, *urls: str) -> str:
    return v2_yaml(name, json.dumps(reads(*urls)), role="attacker")


def log_of(job: Job, role: str) -> str:
    task = job.tasks.get(role=role)
    return Path(task.log_path).read_text() if task.log_path else ""


@pytest.fixture
def serving(cluster, other_user, browser_at) -> Callable[[str], tuple[Job, str, Callable[[], str]]]:  # noqa: F811
    """bob's app job on that node, running and served through the proxy; (job, secret, a read of
    bob.txt through the proxy)."""

    def start(node: str) -> tuple[Job, str, Callable[[], str]]:
        secret = f"bobs-secret-{secrets.token_hex(6)}"
        job = cluster.run_on(node, submit_job(other_user, bobs_app_job(secret)), JobState.RUNNING)
        browser = browser_at(InteractiveApp.objects.get(job=job), other_user)

        def through_proxy() -> str:
            answer = browser.get("/bob.txt")
            return answer.text if answer.status_code == 200 else f"{answer.status_code}"

        deadline = time.monotonic() + 60
        while secret not in through_proxy():
            assert time.monotonic() < deadline, f"the proxy never served bob's app: {through_proxy()}"
            time.sleep(0.3)
        return job, secret, through_proxy

    return start


def attacks(cluster: Cluster, user, urls: list[str], *nodes: str) -> dict[str, str]:
    """alice's task on each node reads the URLs; what each printed."""
    logs = {}
    for node in nodes:
        job = cluster.run_on(node, submit_job(user, attack_job(f"attack-{node}", *urls)), *FINISHED_JOB_STATES)
        logs[node] = log_of(job, "attacker")
    return logs


def test_a_process_tasks_app_is_served_by_the_proxy_and_read_by_no_other_users_task(cluster, serving, user):
    bobs, secret, through_proxy = serving("process")
    port = bobs.tasks.get(role="main").ports["web"][0]
    url = f"http://{cluster.host_address}:{port}/bob.txt"

    tries = attacks(cluster, user, [url], "process", "docker", "remote-1")

    assert {node: secret in log for node, log in tries.items()} == dict.fromkeys(tries, False), tries
    assert all("NO" in log.split() for log in tries.values()), tries
    assert secret in log_of(bobs, "mate")  # (bob's own task reads it, at the node's address and port)
    assert secret in through_proxy()


def test_a_docker_tasks_app_is_served_by_the_proxy_and_read_by_no_other_users_task(cluster, serving, user):
    bobs, secret, through_proxy = serving("docker")
    main = bobs.tasks.get(role="main")
    port = main.ports["web"][0]
    urls = [f"http://{cluster.host_address}:{port}/bob.txt", f"http://{main.ip}:{port}/bob.txt"]

    tries = attacks(cluster, user, urls, "process", "docker", "remote-1")

    assert {node: secret in log for node, log in tries.items()} == dict.fromkeys(tries, False), tries
    assert all(log.split().count("NO") == 2 for log in tries.values()), tries
    deadline = time.monotonic() + 30
    while secret not in log_of(bobs, "mate"):  # (bob's own task reads it on the job's network)
        assert time.monotonic() < deadline, log_of(bobs, "mate")
        time.sleep(0.2)
    assert secret in through_proxy()
