"""InfiniBand (issue 31): `extraContainerOptions.infiniband: true` only where a node of the job's VC
declares InfiniBand (refused at submit naming the field otherwise), placed only on such nodes, the
devices and IPC_LOCK passed to its Docker tasks; locked memory unlimited on Docker tasks."""

import pytest
from docker.types import Ulimit

from clusters.executors.base import TaskLaunch
from clusters.executors.docker import device_options
from clusters.models import Node
from jobs.actions import submit_job
from jobs.models import JobState
from jobs.protocol import JobConfigError
from tests.factories import v2_yaml

IB = "    extraContainerOptions:\n      infiniband: true\n"


def launch(**fields) -> TaskLaunch:
    values = dict(
        job_id=1, job_name="a~b", job_attempt=1, role="worker", index=0, task_attempt=1, image="i",
        command="true", env={}, cpu=1, memory_mb=256, shm_mb=64, gpus=[], ports={}, log_path="/x", work_dir="/y",
    )  # fmt: skip
    values.update(fields)
    return TaskLaunch(**values)  # type: ignore[arg-type]


@pytest.fixture
def refused_infiniband(user, default_vc) -> JobConfigError:
    Node.objects.create(name="plain", executor="docker", address="10.0.0.9", cpus=4, memory_mb=4096)
    with pytest.raises(JobConfigError) as info:
        submit_job(user, v2_yaml("rdma", role_extra=IB))
    return info.value


@pytest.mark.django_db
def test_it_refuses_infiniband_where_no_node_of_the_vc_has_it_naming_the_field(refused_infiniband):
    assert refused_infiniband.english == [
        (
            "taskRoles.worker.extraContainerOptions.infiniband",
            'no node of virtual cluster "default" has InfiniBand devices; remove it, or ask an admin',
        )
    ]
    assert refused_infiniband.codes == [("taskRoles.worker.extraContainerOptions.infiniband", "config.infiniband")]


@pytest.mark.django_db
def test_it_accepts_infiniband_where_a_node_declares_it(user, default_vc):
    Node.objects.create(name="ib", executor="docker", address="10.0.0.9", cpus=4, memory_mb=4096, infiniband=True)
    job = submit_job(user, v2_yaml("rdma", role_extra=IB))
    assert job.state == JobState.WAITING


def test_it_passes_the_infiniband_devices_and_ipc_lock_to_a_task_asking_them():
    options = device_options(launch(infiniband=True), unlimited_memlock=True)
    assert options["devices"] == ["/dev/infiniband:/dev/infiniband:rwm"]
    assert options["cap_add"] == ["IPC_LOCK"]
    assert options["ulimits"] == [Ulimit(name="memlock", soft=-1, hard=-1)]
    assert device_options(launch(), unlimited_memlock=False) == {}


@pytest.mark.django_db
def test_it_places_an_infiniband_job_on_no_node_without_it(user, default_vc, process_node, scheduler):
    Node.objects.create(
        name="ib", executor="docker", address="10.0.0.9", cpus=4, memory_mb=4096, infiniband=True, schedulable=False
    )
    job = submit_job(user, v2_yaml("rdma", role_extra=IB))
    for _ in range(3):
        scheduler.run_once()
    job.refresh_from_db()
    assert job.state == JobState.WAITING
    assert not job.tasks.exclude(node=None).exists()


@pytest.mark.django_db
def test_it_says_the_infiniband_refusal_in_chinese(refused_infiniband):
    from web.texts import translated

    [(_field, message)] = refused_infiniband.errors
    assert translated(message, "zh-hans").startswith('虚拟集群 "default" 中没有带 InfiniBand 设备的节点')


@pytest.mark.django_db
def test_it_declares_a_nodes_infiniband_with_addnode():
    import io
    from pathlib import Path

    from django.core.management import call_command

    args = ["--address", "10.0.0.12", "--executor", "docker", "--cpus", "4", "--memory-mb", "4096"]
    call_command("addnode", "ib1", *args, "--infiniband", stdout=io.StringIO())
    call_command("addnode", "plain1", *args, stdout=io.StringIO())
    call_command("addnode", "--local", "--executor", "process", stdout=io.StringIO())
    found = {node.name: node.infiniband for node in Node.objects.all()}
    assert found == {"ib1": True, "plain1": False, "local": Path("/dev/infiniband").is_dir()}
