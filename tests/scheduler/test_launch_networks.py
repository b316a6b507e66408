"""Which network a Docker task gets (scheduling.launch.build_launch): its job's own network when the
job sits on one node; the node's network, with its job-mates' names and ssh ports, when it spans
nodes (docs/architecture.md, "Networks")."""

import pytest

from clusters.models import Node
from scheduling.launch import build_launch
from tests.factories import create_job

pytestmark = pytest.mark.django_db


@pytest.fixture
def two_nodes(db):
    return [
        Node.objects.create(name=f"node-{n}", executor="docker", address=f"10.250.0.{n + 1}", cpus=4) for n in (1, 2)
    ]


def placed_job(user, nodes, *, addresses=None):
    """A two-worker job, worker-i on nodes[i], at `addresses` (default: each node's own)."""
    job = create_job(user, "span", roles={"worker": 2}, keypair=True)
    for task, node in zip(job.tasks.order_by("index"), nodes, strict=True):
        task.node = node
        task.ip = (addresses or {}).get(task.index, node.address)
        task.ports = {"http": [20000], "ssh": [20001 + task.index]}
        task.save()
    return job


def launch_of(job, index):
    everyone = list(job.tasks.select_related("node"))
    task = next(t for t in everyone if t.index == index)
    return build_launch(job, task, everyone, {})


def test_it_runs_a_job_that_spans_nodes_on_the_nodes_networks(user, two_nodes):
    assert launch_of(placed_job(user, two_nodes), 0).host_network is True


def test_it_names_every_job_mate_at_its_nodes_address_in_etc_hosts(user, two_nodes):
    launch = launch_of(placed_job(user, two_nodes), 0)
    assert launch.extra_hosts == {"worker-0": "10.250.0.2", "worker-1": "10.250.0.3"}


def test_it_tells_a_spanning_tasks_sshd_its_own_port_and_its_job_mates_ports(user, two_nodes):
    env = launch_of(placed_job(user, two_nodes), 1).env
    assert env["PAI_SSH_PORT"] == "20002"
    assert env["PAI_SSH_HOST_PORTS"] == "worker-0:20001 worker-1:20002"


def test_it_gives_a_spanning_task_its_job_mates_node_addresses(user, two_nodes):
    env = launch_of(placed_job(user, two_nodes), 0).env
    assert env["PAI_HOST_IP_worker_1"] == "10.250.0.3"
    assert env["PAI_TASK_ROLE_worker_HOST_LIST"] == "10.250.0.2:20000,10.250.0.3:20000"


def test_it_keeps_a_job_on_one_node_on_its_own_network(user, two_nodes):
    node = two_nodes[0]
    launch = launch_of(placed_job(user, [node, node], addresses={0: "10.213.5.2", 1: "10.213.5.3"}), 0)
    assert launch.host_network is False
    assert launch.extra_hosts == {"worker-0": "10.213.5.2", "worker-1": "10.213.5.3"}  # (before any runs)
    assert "PAI_SSH_HOST_PORTS" not in launch.env and launch.env["PAI_HOST_IP_worker_1"] == "10.213.5.3"


def test_it_never_puts_a_process_task_on_a_host_network(user, two_nodes):
    Node.objects.filter(pk__in=[n.pk for n in two_nodes]).update(executor="process")
    job = placed_job(user, [Node.objects.get(pk=n.pk) for n in two_nodes])
    assert launch_of(job, 0).host_network is False
