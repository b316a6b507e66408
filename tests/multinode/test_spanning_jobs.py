"""A job whose two tasks run on two nodes: every address, name and port the job gives a task
reaches its job-mate across the network, and so do `ssh worker-1` and the ssh barrier.

Each node has 2 CPUs and each task asks for 2, so placement puts one task on each node. The job
runs once per module (through jobs.actions and the real scheduler loop); the tests read what
worker-0 found, which it writes to its log as `KEY=value` lines.
"""

from __future__ import annotations

import re
import time
from collections.abc import Iterator
from dataclasses import dataclass

import pytest
from django.test import override_settings

from tests.factories import create_user, default_image
from tests.multinode.conftest import NODE_CPUS, DevCluster, run_to_end

# django_db: so the test database is set up; the module fixtures write to it outside the tests' transactions.
pytestmark = [pytest.mark.docker, pytest.mark.slow, pytest.mark.django_db]

UNDECLARED_PORT = 47011
SSH_PLUGIN = """extras:
  com.microsoft.pai.runtimeplugin:
    - plugin: ssh
      parameters:
        jobssh: true
        sshbarrier: {barrier}
"""
# worker-1 answers on its declared `http` port and on a port nobody declared, then waits until
# worker-0 has been in over ssh; worker-0 looks for it by every way the job offers.
COMMAND = f"""|
        echo "HOSTS=$PAI_TASK_ROLE_worker_HOST_LIST"
        serve() {{ python3 -c 'import socket, sys
        server = socket.create_server(("", int(sys.argv[1])))
        connection, _ = server.accept()
        connection.sendall(sys.argv[2].encode() + b"\\n")' "$@"; }}
        ask() {{ for _ in $(seq 150); do
          reply=$(timeout 2 bash -c 'exec 3<>"/dev/tcp/$0/$1" && head -1 <&3' "$1" "$2" 2>/dev/null) &&
            [ -n "$reply" ] && {{ echo "$reply"; return 0; }}
          sleep 0.2; done; return 1; }}
        if [ "$PAI_TASK_INDEX" = 1 ]; then
          serve "$PAI_CONTAINER_HOST_http_PORT_LIST" declared-reply & serve {UNDECLARED_PORT} undeclared-reply &
          for _ in $(seq 1200); do [ -e /tmp/done ] && exit 0; sleep 0.1; done; exit 1
        fi
        echo "RESOLVED=$(getent hosts worker-1)"
        echo "DECLARED=$(ask "$PAI_HOST_IP_worker_1" "$PAI_PORT_LIST_worker_1_http")"
        echo "UNDECLARED=$(ask worker-1 {UNDECLARED_PORT})"
        echo "SSH=$(ssh worker-1 hostname)"
        ssh worker-1 touch /tmp/done"""


def spanning_job(name: str, *, barrier: bool) -> str:
    return f"""protocolVersion: 2
name: {name}
type: job
prerequisites:
  - {{name: image, type: dockerimage, uri: {default_image()}}}
{SSH_PLUGIN.format(barrier=str(barrier).lower())}taskRoles:
  worker:
    instances: 2
    dockerImage: image
    resourcePerInstance: {{cpu: {NODE_CPUS}, memoryMB: 256, gpu: 0, ports: {{http: 1}}}}
    commands:
      - {COMMAND}
"""


@dataclass(frozen=True)
class FinishedJob:
    state: str
    nodes: dict[str, str]  # task name -> node name
    addresses: dict[str, str]  # node name -> address
    logs: dict[str, str]  # task name -> its log

    def said(self, task: str, key: str) -> str:
        """The value of worker's `KEY=value` line."""
        match = re.search(rf"^{key}=(.*)$", self.logs[task], re.MULTILINE)
        assert match, f"{task} never printed {key}; its log:\n{self.logs[task]}"
        return match.group(1).strip()


def run_spanning_job(cluster: DevCluster, work: str, *, barrier: bool) -> FinishedJob:
    """Submit the job on the dev cluster's nodes, run the scheduler until it ends, read what it left."""
    import docker

    from clusters.executors.registry import executor_for
    from clusters.models import Node, VirtualCluster
    from jobs.actions import submit_job
    from scheduling.scheduler import Scheduler
    from tests.docker.conftest import remove_namespace

    namespace = f"paimn{int(time.time() * 1000) % 10**8}"
    overrides = {
        "PAI_WORK_ROOT": f"{work}/work",
        "PAI_LOG_DIR": f"{work}/logs",
        "PAI_FS_ROOT": f"{work}/fs",
        "PAI_DOCKER_NAMESPACE": namespace,
    }
    with override_settings(**overrides):
        executor_for.cache_clear()
        VirtualCluster.objects.get_or_create(name="default", defaults={"share_percent": 100})
        user = create_user(f"span{'b' if barrier else ''}")
        nodes = [
            Node.objects.create(name=e.name, docker_url=e.docker_url, address=e.address, cpus=NODE_CPUS, memory_mb=4096)
            for e in cluster.engines
        ]
        try:
            job = submit_job(user, spanning_job("span", barrier=barrier))
            scheduler = Scheduler(holder="multinode-test")
            run_to_end(job, scheduler)
            tasks = {f"{t.role}-{t.index}": t for t in job.tasks.select_related("node")}
            return FinishedJob(
                state=job.state,
                nodes={name: t.node.name for name, t in tasks.items() if t.node},
                addresses={node.name: node.address for node in nodes},
                logs={name: open(t.log_path).read() if t.log_path else "" for name, t in tasks.items()},
            )
        finally:
            executor_for.cache_clear()
            for engine in cluster.engines:
                remove_namespace(docker.APIClient(base_url=engine.docker_url, timeout=60), namespace)
            user.delete()  # and its jobs
            Node.objects.filter(pk__in=[node.pk for node in nodes]).delete()


@pytest.fixture(scope="module")
def finished(dev_cluster, django_db_setup, django_db_blocker, tmp_path_factory) -> Iterator[FinishedJob]:
    with django_db_blocker.unblock():
        yield run_spanning_job(dev_cluster, str(tmp_path_factory.mktemp("span")), barrier=False)


@pytest.fixture(scope="module")
def finished_with_barrier(dev_cluster, django_db_setup, django_db_blocker, tmp_path_factory) -> Iterator[FinishedJob]:
    with django_db_blocker.unblock():
        yield run_spanning_job(dev_cluster, str(tmp_path_factory.mktemp("span-barrier")), barrier=True)


def test_it_places_the_two_tasks_on_two_nodes_and_the_job_succeeds(finished):
    assert set(finished.nodes.values()) == set(finished.addresses), finished.nodes
    assert finished.state == "SUCCEEDED", finished.logs


def test_it_resolves_a_job_mates_name_to_its_nodes_address(finished):
    address = finished.addresses[finished.nodes["worker-1"]]
    assert finished.said("worker-0", "RESOLVED").split() == [address, "worker-1"]


def test_it_reaches_a_job_mates_declared_port_at_its_host_ip(finished):
    assert finished.said("worker-0", "DECLARED") == "declared-reply"


def test_it_reaches_a_port_nobody_declared_on_a_job_mate(finished):
    assert finished.said("worker-0", "UNDECLARED") == "undeclared-reply"


def test_it_runs_ssh_to_a_job_mate_on_another_node_by_its_name(finished):
    assert finished.said("worker-0", "SSH") == "worker-1"


def test_it_gives_every_task_a_host_list_naming_both_nodes_addresses(finished):
    expected = {finished.addresses[finished.nodes[task]] for task in ("worker-0", "worker-1")}
    for task in ("worker-0", "worker-1"):
        hosts = {entry.split(":")[0] for entry in finished.said(task, "HOSTS").split(",")}
        assert hosts == expected and len(hosts) == 2


def test_it_passes_the_ssh_barrier_across_nodes_before_the_commands_run(finished_with_barrier):
    assert finished_with_barrier.state == "SUCCEEDED", finished_with_barrier.logs
    assert set(finished_with_barrier.nodes.values()) == set(finished_with_barrier.addresses)
    for task in ("worker-0", "worker-1"):
        log = finished_with_barrier.logs[task]
        assert log.index("barrier: every task answers") < log.index("HOSTS=")


def test_it_runs_ssh_to_a_job_mate_on_another_node_after_the_barrier(finished_with_barrier):
    assert finished_with_barrier.said("worker-0", "SSH") == "worker-1"
