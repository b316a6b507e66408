"""Jobs of a Slurm VC whose nodes have Docker engines (`dev-cluster.sh up 2 --slurm --docker`: a
dockerd in each Slurm node's namespace): each task runs as a container of the job's image on the
engine of the node Slurm chose, on that node's network, with the Docker tasks' contract (PAI_*, the
GPUs Slurm gave the step, sshd, logs), and web SSH reaches it. One cluster for the module."""

from __future__ import annotations

import asyncio
import socket
import time
from pathlib import Path

import docker
import pytest

from jobs.actions import stop_job, submit_job
from jobs.models import Job
from jobs.ssh import ssh_info
from tests.conftest import require
from tests.factories import create_user
from tests.slurm.conftest import NODE_CPUS, bring_up, slurm_available, slurm_vc_on
from tests.slurm.test_slurm_jobs import EVERY_TASK, WORKER, job_text, logs, role, said, slurm_name
from tests.ssh.websocket import communicator, read_until, session_cookie, socket_path

pytestmark = [pytest.mark.slurm, pytest.mark.slow]

VC = "defaults: {virtualCluster: gpu}\n"


@pytest.fixture(scope="module")
def engine_cluster(tmp_path_factory):
    require(slurm_available() and bool(__import__("shutil").which("dockerd")), "root, slurm-wlm, munge and dockerd")
    yield from bring_up(tmp_path_factory, 2, "--docker", "--no-register")


@pytest.fixture
def vc(engine_cluster, transactional_db, settings, tmp_path):
    """Transactional: the web terminal's consumer reads the job on a thread of its own."""
    yield from slurm_vc_on(engine_cluster, settings, tmp_path)


@pytest.fixture
def user(transactional_db):
    return create_user("slurmer")


def containers(cluster, *labels: str, **filters) -> dict[str, list[str]]:
    """Node name -> ids of the portal's containers on its engine (this test's namespace)."""
    from django.conf import settings

    found = {}
    for node, url in cluster.engines.items():
        api = docker.APIClient(base_url=url)
        label = [f"pai.portal={settings.PAI_DOCKER_NAMESPACE}", *labels]
        found[node] = [c["Id"] for c in api.containers(all=True, filters={"label": label, **filters})]
        api.close()
    return found


def started(job: Job, count: int):
    return lambda: job.tasks.exclude(executor_id="").count() == count


def test_it_runs_each_task_in_a_container_of_the_jobs_image_on_the_node_slurm_chose(
    engine_cluster, vc, user, run_until
):
    probe = 'echo "INIT=$(cat /proc/1/comm) OS=$(. /etc/os-release; echo $VERSION_CODENAME) NV=$NVIDIA_VISIBLE_DEVICES'
    probe += ' ADDRS=$(hostname -I | tr " " ,) JOB=$PAI_JOB_NAME COUNT=$PAI_JOB_TASK_COUNT"\n        ' + WORKER
    job = submit_job(
        user, job_text("boxed", role("worker", probe, instances=2, cpu=NODE_CPUS, gpu=1, extra=EVERY_TASK), VC)
    )
    job = run_until(job, "SUCCEEDED", "FAILED", timeout=90)
    out = logs(job)
    assert job.state == "SUCCEEDED", out
    tasks = {f"{t.role}-{t.index}": t for t in job.tasks.select_related("node")}
    assert len({task.node.name for task in tasks.values()}) == 2  # 2 CPUs a task, 2 a node
    for name, task in tasks.items():
        address = engine_cluster.addresses[task.node.name]
        assert said(out[name], "INIT") == "docker-init"  # PID 1 of a container the Docker executor made
        assert said(out[name], "OS") == "bookworm"  # the job's image
        assert address in said(out[name], "ADDRS").split(",")  # on the network of the node Slurm chose
        assert said(out[name], "IP") == address == task.ip
        assert (said(out[name], "JOB"), said(out[name], "COUNT")) == ("boxed", "2")
        # The GPU Slurm's GRES gave the step, handed to the engine; CUDA numbers it from 0 inside.
        assert said(out[name], "NV") == ",".join(map(str, task.gpus)) and len(task.gpus) == 1
        assert said(out[name], "GPUS") == "0"
    hosts = said(out["worker-0"], "HOSTS").split(",")
    assert [h.split(":")[0] for h in hosts] == [tasks[f"worker-{i}"].ip for i in (0, 1)]
    assert said(out["worker-0"], "REPLY") == "hello-from-worker-1"
    assert containers(engine_cluster) == {node: [] for node in engine_cluster.engines}  # removed once recorded
    assert engine_cluster.wait_until_idle(timeout=10) == []


def wait_for_banner(address: str, port: int, timeout: float = 15.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            with socket.create_connection((address, port), timeout=1) as connection:
                if connection.recv(4) == b"SSH-":
                    return
        except OSError:
            pass
        time.sleep(0.1)
    raise AssertionError(f"no sshd answers at {address}:{port}")


def test_it_opens_web_ssh_into_the_tasks_sshd_and_stop_removes_the_containers(engine_cluster, vc, user, run_until):
    job = submit_job(user, job_text("reach-me", role("worker", "sleep 600", instances=2, cpu=NODE_CPUS), VC))
    job = run_until(job, condition=started(job, 2))
    rows = {f"{row['role']}-{row['index']}": row for row in ssh_info(job)}
    for task in job.tasks.select_related("node"):  # the task's sshd: its node's address, its own ssh port
        row = rows[f"{task.role}-{task.index}"]
        assert (row["ip"], row["port"]) == (task.node.address, task.ports["ssh"][0])
    assert sum(len(ids) for ids in containers(engine_cluster, status="running").values()) == 2
    wait_for_banner(rows["worker-1"]["ip"], rows["worker-1"]["port"])  # RUNNING comes before the sshd listens
    cookie, path = session_cookie(user), socket_path(job, index=1)

    async def terminal() -> bytes:
        comm = communicator(path, cookie=cookie)
        connected, code = await comm.connect(timeout=10)
        assert connected, code
        await comm.send_to(bytes_data=b"echo in-$PAI_CURRENT_TASK_ROLE_CURRENT_TASK_INDEX-$(cat /proc/1/comm)\n")
        output = await read_until(comm, b"in-1-docker-init", timeout=20)
        await comm.disconnect()
        return output

    assert b"in-1-docker-init" in asyncio.run(terminal())
    stop_job(job, user)
    run_until(job, "STOPPED")
    assert containers(engine_cluster) == {node: [] for node in engine_cluster.engines}
    assert engine_cluster.wait_until_idle(timeout=10) == []


def test_it_retries_a_failing_task_in_a_new_container_per_the_exit_spec(engine_cluster, vc, user, run_until):
    # Exit 1 is unknown to the exit spec (255): retried while taskRetryCount allows, then the job fails.
    job = submit_job(
        user,
        job_text("flaky", role("worker", "echo attempt-$PAI_JOB_NAME; exit 1", extra="    taskRetryCount: 1\n"), VC),
    )
    job = run_until(job, "SUCCEEDED", "FAILED")
    task = job.tasks.get()
    assert (job.state, task.attempt, task.retries, task.exit_code, task.user_exit_code) == ("FAILED", 2, 1, 255, 1)
    assert "attempt-flaky" in Path(task.log_path).read_text()  # the second attempt's own log
    assert len(engine_cluster.slurm_jobs(slurm_name(job, 1))) == 1  # the retry ran in the same allocation
    assert containers(engine_cluster) == {node: [] for node in engine_cluster.engines}
    assert engine_cluster.wait_until_idle(timeout=10) == []


def test_it_starts_nothing_twice_when_the_scheduler_restarts_mid_run(engine_cluster, vc, user, run_until):
    from clusters.executors.registry import executor_for
    from scheduling.scheduler import Scheduler

    job = submit_job(user, job_text("steady", role("worker", "sleep 6", instances=2, extra=EVERY_TASK), VC))
    job = run_until(job, condition=started(job, 2))
    before = {f"{t.role}-{t.index}": t.executor_id for t in job.tasks.all()}
    executor_for.cache_clear()  # a new scheduler process: no executor remembers anything
    restarted = Scheduler(holder="slurm-test")
    restarted.reconcile()
    for _ in range(10):
        restarted.run_once()
        time.sleep(0.1)
    held = sorted(i for ids in containers(engine_cluster).values() for i in ids)
    assert held == sorted(before.values())  # the same two containers, adopted
    job = run_until(job, "SUCCEEDED", "FAILED", scheduler=restarted)
    assert job.state == "SUCCEEDED"
    assert {f"{t.role}-{t.index}": (t.executor_id, t.attempt) for t in job.tasks.all()} == {
        h: (i, 1) for h, i in before.items()
    }
    assert len(engine_cluster.slurm_jobs(slurm_name(job, 1))) == 1


def test_it_stops_the_container_with_its_step_when_slurm_cancels_the_job_while_the_portal_is_down(
    engine_cluster, vc, user, run_until
):
    job = submit_job(user, job_text("cancelled", role("worker", "sleep 600"), VC))
    job = run_until(job, condition=started(job, 1))
    assert sum(len(ids) for ids in containers(engine_cluster, status="running").values()) == 1
    # No scheduler pass from here: the step's wrapper stops the container itself on Slurm's SIGTERM.
    engine_cluster.run("scancel", f"--name={slurm_name(job, 1)}")
    deadline = time.monotonic() + 20
    while any(containers(engine_cluster, status="running").values()):
        assert time.monotonic() < deadline, "the container outlived its Slurm job"
        time.sleep(0.2)
    assert engine_cluster.wait_until_idle(timeout=10) == []
    # The portal, back, takes Slurm's word (cancelled behind its back: retried free) and removes it.
    job = run_until(job, condition=lambda: Job.objects.get(pk=job.pk).job_attempt == 2)
    assert not any(ids for ids in containers(engine_cluster, "pai.job-attempt=1").values())
