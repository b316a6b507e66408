"""Shared storage on a real two-node cluster: the users' areas on a storage every node mounts, so a
job's tasks on both nodes write to one place; a v2 job's teamwise_storage mount; a storage the node
cannot mount (an NFS server that is down, or no NFS client on the node) is a diagnosis with its
exit code, never a silent success.

The storages here are host paths (every dev-cluster node sees the machine's files at the same
place, as NFS mounted on each node would be), because on this machine's kernel nothing can mount
NFS (docs/admin/storage.md).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from django.test import override_settings

from tests.factories import create_storage, create_user, v1_json, v1_role, v2_yaml
from tests.multinode.conftest import NODE_CPUS, DevCluster, run_to_end

pytestmark = [pytest.mark.docker, pytest.mark.slow]


@dataclass(frozen=True)
class Ran:
    job: Any
    nodes: list[str]  # each task's node (the nodes are gone after the run)
    then: Any = None  # what `then` found


def run_job(cluster: DevCluster, work: Path, user: Any, text: str, then: Callable[[Any], Any] | None = None) -> Ran:
    """Submit on the dev cluster's nodes, run the real scheduler until the job ends; then, on the
    same nodes and scheduler, `then(scheduler)`."""
    import docker

    from clusters.executors.registry import executor_for
    from clusters.models import Node, VirtualCluster
    from jobs.actions import submit_job
    from scheduling.scheduler import Scheduler
    from tests.docker.conftest import remove_namespace

    namespace = f"paist{int(time.time() * 1000) % 10**8}"
    overrides = {
        "PAI_WORK_ROOT": str(work / "work"),
        "PAI_LOG_DIR": str(work / "logs"),
        "PAI_FS_ROOT": str(work / "fs"),
        "PAI_DOCKER_NAMESPACE": namespace,
    }
    with override_settings(**overrides):
        executor_for.cache_clear()
        VirtualCluster.objects.get_or_create(name="default", defaults={"share_percent": 100})
        nodes = [
            Node.objects.create(name=e.name, docker_url=e.docker_url, address=e.address, cpus=NODE_CPUS, memory_mb=4096)
            for e in cluster.engines
        ]
        try:
            job = submit_job(user, text)
            scheduler = Scheduler(holder="storage-test")
            run_to_end(job, scheduler)
            nodes_used = [task.node.name for task in job.tasks.select_related("node") if task.node]
            return Ran(job, nodes_used, then(scheduler) if then else None)
        finally:
            executor_for.cache_clear()
            for engine in cluster.engines:
                remove_namespace(docker.APIClient(base_url=engine.docker_url, timeout=60), namespace)
            Node.objects.filter(pk__in=[node.pk for node in nodes]).delete()


def log_of(task: Any) -> str:
    return Path(task.log_path).read_text() if task.log_path else ""


@pytest.fixture
def storage_user(transactional_db):
    return create_user("storer")


def test_it_writes_each_tasks_output_to_the_shared_storage_from_both_nodes(dev_cluster, storage_user, tmp_path):
    shared = tmp_path / "shared"
    create_storage(
        "homes", kind="hostPath", server="", path=str(shared), mount_path="/mnt/homes", holds_user_areas=True
    )
    worker = v1_role(
        "worker",
        'i="$PAI_CURRENT_TASK_ROLE_CURRENT_TASK_INDEX"; echo "$i" > "$PAI_OUTPUT_DIR/$i"',
        taskNumber=2,
        cpuNumber=NODE_CPUS,
    )
    text = v1_json("spread", roles=[worker], outputDir="$PAI_DEFAULT_FS_URI/out")
    ran = run_job(dev_cluster, tmp_path, storage_user, text)
    assert ran.job.state == "SUCCEEDED", [log_of(task) for task in ran.job.tasks.all()]
    assert len(set(ran.nodes)) == 2
    out = shared / "storer" / "out"
    assert sorted(p.name for p in out.iterdir()) == ["0", "1"]
    assert (out / "1").read_text().strip() == "1"


def test_it_reads_a_dataset_from_a_teamwise_storage_mount_point(dev_cluster, storage_user, tmp_path):
    datasets = tmp_path / "datasets"
    datasets.mkdir()
    (datasets / "mnist.txt").write_text("the-dataset\n")
    create_storage("datasets", kind="hostPath", server="", path=str(datasets), read_only=True)
    plugin = (
        "extras:\n  com.microsoft.pai.runtimeplugin:\n    - plugin: teamwise_storage\n"
        "      parameters:\n        storageConfigNames: [datasets]\n"
    )
    command = "cat /mnt/datasets/mnist.txt && ! touch /mnt/datasets/written 2>/dev/null"
    job = run_job(dev_cluster, tmp_path, storage_user, v2_yaml("reader", command, extra=plugin)).job
    task = job.tasks.get()
    assert job.state == "SUCCEEDED", log_of(task)
    assert "the-dataset" in log_of(task)
    assert not (datasets / "written").exists()


def test_it_refuses_at_submit_a_storage_that_does_not_exist(storage_user, default_vc):
    from jobs.actions import submit_job
    from jobs.protocol import JobConfigError

    plugin = "extras:\n  storages:\n    - name: nosuch\n"
    with pytest.raises(JobConfigError) as error:
        submit_job(storage_user, v2_yaml("unknown", extra=plugin))
    assert dict(error.value.english) == {"extras.storages[0].name": "storage 'nosuch' does not exist (yours: none)"}


def test_it_fails_a_task_whose_nfs_server_is_down_with_a_diagnosis_then_says_why_jobs_wait(
    dev_cluster, storage_user, tmp_path
):
    # Nothing serves NFS at the nodes' own loopback: the mount fails (or, without an NFS client in
    # the node's kernel, cannot even be tried); either way the node says so.
    options = "nfsvers=4.1,soft,timeo=10,retrans=1"
    create_storage("down", server="127.0.0.1", path="/export/down", mount_options=options)
    plugin = "extras:\n  storages:\n    - name: down\n"

    def until_one_waits(scheduler: Any) -> Any:
        """More such jobs: each is placed on a node not yet known to fail, fails, until one waits."""
        from jobs.actions import submit_job

        for attempt in range(len(dev_cluster.engines) + 1):
            job = submit_job(storage_user, v2_yaml(f"nfsdown-{attempt}", extra=plugin))
            deadline = time.monotonic() + 60
            while not job.is_finished and "no node can mount" not in job.pending_reason:
                assert time.monotonic() < deadline, f"job stayed {job.state}: {job.pending_reason}"
                scheduler.run_once()
                time.sleep(0.1)
                job.refresh_from_db()
            if not job.is_finished:
                return job
        raise AssertionError("every job was tried on a node")

    ran = run_job(dev_cluster, tmp_path, storage_user, v2_yaml("nfsdown", extra=plugin), then=until_one_waits)
    task = ran.job.tasks.get()
    assert ran.job.state == "FAILED"
    assert task.exit_code == -1210
    assert "storage down could not be mounted at /mnt/down on node" in task.exit_diagnostics, task.exit_diagnostics
    waiting = ran.then
    assert waiting.state == "WAITING"
    assert waiting.pending_reason.startswith("no node can mount the job's storage: storage down: ")
    assert all(f"{engine.name} could not mount it" in waiting.pending_reason for engine in dev_cluster.engines)
