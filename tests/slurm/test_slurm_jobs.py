"""Jobs of a Slurm VC on a real 3-node Slurm cluster (2 CPUs and 4 fake p100 GPUs per node):
submitted whole by the portal, placed by Slurm, run in Slurm's steps with the portal's `PAI_*`
contract, followed, stopped and retried by the portal."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from clusters.job_files import task_work_dir
from jobs.actions import stop_job, submit_job
from jobs.models import Job
from tests.factories import create_user, default_image
from tests.slurm.conftest import NODE_CPUS

pytestmark = [pytest.mark.slurm, pytest.mark.slow]


def job_text(name: str, roles: str, extra: str = "") -> str:
    return f"""protocolVersion: 2
name: {name}
type: job
prerequisites:
  - {{name: image, type: dockerimage, uri: {default_image()}}}
{extra}taskRoles:
{roles}"""


def role(name: str, command: str, *, instances: int = 1, cpu: int = 1, gpu: int = 0, extra: str = "") -> str:
    return f"""  {name}:
    instances: {instances}
    dockerImage: image
{extra}    resourcePerInstance: {{cpu: {cpu}, memoryMB: 256, gpu: {gpu}, ports: {{http: 1}}}}
    commands:
      - |
        {command}
"""


# worker-1 answers on its `http` port; worker-0 asks it there, at the address its host list names.
WORKER = """echo "GPUS=$CUDA_VISIBLE_DEVICES IP=$PAI_CONTAINER_HOST_IP"
        echo "HOSTS=$PAI_TASK_ROLE_worker_HOST_LIST MASTER_HOSTS=$PAI_TASK_ROLE_master_HOST_LIST"
        if [ "$PAI_TASK_INDEX" = 1 ]; then
          exec python3 -c 'import socket, sys
        server = socket.create_server(("", int(sys.argv[1])))
        server.accept()[0].sendall(b"hello-from-worker-1\\n")' "$PAI_CONTAINER_HOST_http_PORT_LIST"
        fi
        echo "RESOLVED=$(getent hosts worker-1 master-0 | awk '{print $1}' | paste -sd,)"
        target=$(echo "$PAI_TASK_ROLE_worker_HOST_LIST" | cut -d, -f2)
        for _ in $(seq 100); do
          reply=$(timeout 2 bash -c 'exec 3<>"/dev/tcp/${0%:*}/${0#*:}" && head -1 <&3' "$target" 2>/dev/null)
          [ -n "$reply" ] && break
          sleep 0.1
        done
        echo "REPLY=$reply\""""
MASTER = 'echo "GPUS=$CUDA_VISIBLE_DEVICES IP=$PAI_CONTAINER_HOST_IP"'
# The job ends when every task has (not at the first success, the default).
EVERY_TASK = "    completion: {minSucceededInstances: -1}\n"


def said(log: str, key: str) -> str:
    match = re.search(rf"\b{key}=(\S*)", log)
    assert match, f"no {key}= in the log:\n{log}"
    return match.group(1)


def logs(job: Job) -> dict[str, str]:
    return {f"{t.role}-{t.index}": Path(t.log_path).read_text() for t in job.tasks.all()}


@pytest.fixture
def user(db):
    return create_user("slurmer")


def test_it_runs_a_two_role_job_on_slurm_nodes_with_the_pai_contract(slurm_cluster, slurm_vc, user, run_until):
    roles = role("master", MASTER, cpu=NODE_CPUS, gpu=2, extra=EVERY_TASK) + role(
        "worker", WORKER, instances=2, cpu=NODE_CPUS, gpu=1, extra=EVERY_TASK
    )
    job = submit_job(user, job_text("gang", roles, extra="defaults: {virtualCluster: gpu}\n"))
    job = run_until(job, "SUCCEEDED", "FAILED", timeout=90)
    out = logs(job)
    assert job.state == "SUCCEEDED", out
    tasks = {f"{t.role}-{t.index}": t for t in job.tasks.select_related("node")}
    nodes = {name: task.node.name for name, task in tasks.items()}
    assert len(set(nodes.values())) == 3, nodes  # 2 CPUs a task, 2 a node: one task per node
    for name, task in tasks.items():  # each task's address is its Slurm node's
        assert said(out[name], "IP") == slurm_cluster.addresses[nodes[name]] == task.ip
    assert said(out["master-0"], "GPUS") == "0,1" and tasks["master-0"].gpus == [0, 1]
    assert said(out["worker-0"], "GPUS") == "0" and said(out["worker-1"], "GPUS") == "0"
    hosts = said(out["worker-0"], "HOSTS").split(",")
    assert [h.split(":")[0] for h in hosts] == [slurm_cluster.addresses[nodes[f"worker-{i}"]] for i in (0, 1)]
    assert said(out["worker-1"], "HOSTS") == said(out["worker-0"], "HOSTS")
    assert said(out["worker-0"], "REPLY") == "hello-from-worker-1"
    # Names as on a Docker job network (issue 31): the sandbox's /etc/hosts has every task's node.
    assert said(out["worker-0"], "RESOLVED") == f"{tasks['worker-1'].ip},{tasks['master-0'].ip}"


def test_it_ends_a_job_the_partition_can_never_hold_with_slurms_reason(slurm_vc, user, run_until):
    job = submit_job(
        user, job_text("big", role("worker", "true", instances=4, gpu=4), extra="defaults: {virtualCluster: gpu}\n")
    )
    # Slurm refuses it at once (sbatch) or holds it (PartitionConfig), as its limits say: either is final.
    job = run_until(job, "FAILED", timeout=30)
    said = job.exit_diagnostics
    assert job.exit_code == -1100 and "Slurm" in said
    assert "no node of partition" in said or "can never hold this job" in said or "can ever hold" in said
    assert "16 GPU(s)" in said and "12 GPU(s)" in said, said


def test_it_ends_a_stopped_job_in_slurm(slurm_cluster, slurm_vc, user, run_until):
    job = submit_job(user, job_text("long", role("worker", "sleep 300"), extra="defaults: {virtualCluster: gpu}\n"))
    job = run_until(job, condition=lambda: job.tasks.exclude(executor_id="").exists())
    assert slurm_cluster.active_jobs()
    stop_job(job, user)
    run_until(job, "STOPPED")
    assert slurm_cluster.wait_until_idle(timeout=10) == []


def test_it_retries_a_failing_task_in_its_allocation_per_the_exit_spec(slurm_cluster, slurm_vc, user, run_until):
    # Exit 1 the first time (unknown to the exit spec: retried while taskRetryCount allows).
    command = "if [ -e failed-once ]; then echo second-attempt; exit 0; fi; touch failed-once; exit 1"
    roles = role("worker", command, extra="    taskRetryCount: 1\n")
    job = submit_job(user, job_text("flaky", roles, extra="defaults: {virtualCluster: gpu}\n"))
    job = run_until(job, "SUCCEEDED", "FAILED")
    task = job.tasks.get()
    assert job.state == "SUCCEEDED" and task.attempt == 2 and task.retries == 1
    assert "second-attempt" in Path(task.log_path).read_text()
    assert len(slurm_cluster.slurm_jobs(slurm_name(job, 1))) == 1  # the retry ran in the same allocation


def test_it_submits_nothing_twice_when_the_scheduler_restarts_mid_run(slurm_cluster, slurm_vc, user, run_until):
    from scheduling.scheduler import Scheduler

    command = "for _ in $(seq 100); do [ -e go ] && exit 0; sleep 0.1; done; exit 1"
    job = submit_job(user, job_text("steady", role("worker", command), extra="defaults: {virtualCluster: gpu}\n"))
    first = Scheduler(holder="slurm-test")
    first.run_once()  # submitted; this scheduler "dies" here
    second = Scheduler(holder="slurm-test")
    job = run_until(job, scheduler=second, condition=lambda: job.tasks.exclude(executor_id="").exists())
    third = Scheduler(holder="slurm-test")  # and a restart while the task runs
    task = job.tasks.get()
    (slurm_vc_work_dir(task)).joinpath("go").touch()
    job = run_until(job, "SUCCEEDED", "FAILED", scheduler=third)
    assert job.state == "SUCCEEDED"
    assert len(slurm_cluster.slurm_jobs(slurm_name(job, 1))) == 1
    assert job.tasks.get().attempt == 1


def test_a_job_that_succeeded_while_the_portal_was_down_is_not_run_again_after_slurm_forgot_it(
    slurm_cluster, slurm_vc, user, run_until
):
    from scheduling.scheduler import Scheduler

    command = "for _ in $(seq 300); do [ -e go ] && exit 0; sleep 0.1; done; exit 1"
    job = submit_job(user, job_text("unseen", role("worker", command), extra="defaults: {virtualCluster: gpu}\n"))
    job = run_until(job, condition=lambda: job.tasks.exclude(executor_id="").exists())
    # The portal is down from here: the task succeeds, its Slurm job ends, and Slurm forgets it.
    slurm_vc_work_dir(job.tasks.get()).joinpath("go").touch()
    assert slurm_cluster.wait_until_idle() == []
    slurm_cluster.restart_slurmctld(forget_jobs=True)
    assert slurm_cluster.slurm_jobs(slurm_name(job, 1)) == []
    job = run_until(job, "SUCCEEDED", "FAILED", scheduler=Scheduler(holder="slurm-test"))  # the portal is back
    # The task's own exit record decides, not "Slurm no longer knows it" (lost, retried).
    assert (job.state, job.job_attempt, job.transient_retries) == ("SUCCEEDED", 1, 0)
    assert job.tasks.get().attempt == 1


def slurm_name(job: Job, attempt: int) -> str:
    from django.conf import settings

    return f"{settings.PAI_SLURM_JOB_PREFIX}-{job.pk}-{attempt}"


def slurm_vc_work_dir(task):
    return task_work_dir(task.job_id, task.role, task.index)


def test_the_cluster_page_shows_the_partitions_nodes_and_quota(slurm_cluster, slurm_vc, user, client):
    from django.urls import reverse

    client.force_login(user)
    page = client.get(reverse("scheduling:overview")).content.decode()
    assert f"Slurm partition {slurm_cluster.name}" in page
    for name, address in slurm_cluster.addresses.items():
        assert name in page and address in page
    assert f"partition {slurm_cluster.name}: idle" in page
    assert "0 / 12" in page  # the VC's GPU quota: the partition's 3 x 4 GPUs


def test_a_job_cancelled_in_slurm_behind_the_portals_back_is_retried_free(slurm_cluster, slurm_vc, user, run_until):
    from jobs.models import TaskAttempt

    command = "if [ -e ran-once ]; then exit 0; fi; touch ran-once; sleep 300"
    job = submit_job(user, job_text("evicted", role("worker", command), extra="defaults: {virtualCluster: gpu}\n"))
    task = job.tasks.get()
    job = run_until(job, condition=lambda: slurm_vc_work_dir(task).joinpath("ran-once").exists())
    slurm_cluster.run("scancel", f"--name={slurm_name(job, 1)}")  # an admin, or a preemption
    job = run_until(job, "SUCCEEDED", "FAILED")
    assert job.state == "SUCCEEDED" and job.job_attempt == 2
    assert (job.transient_retries, job.retries_used) == (1, 0)  # transient: not charged to jobRetryCount
    first = TaskAttempt.objects.get(job=job, job_attempt=1)
    assert first.exit_code == -1000 and "Slurm job ended CANCELLED" in first.exit_diagnostics
    assert len(slurm_cluster.slurm_jobs(slurm_name(job, 2))) == 1


def test_createvc_refuses_a_partition_slurm_does_not_have(slurm_vc):
    from django.core.management import CommandError, call_command

    with pytest.raises(CommandError, match=r"--slurm-partition: Slurm has no partition 'nope'"):
        call_command("createvc", "other", "--slurm-partition", "nope")


def test_a_slurmctld_restart_loses_nothing_and_submits_nothing_twice(slurm_cluster, slurm_vc, user, run_until):
    command = "for _ in $(seq 300); do [ -e go ] && exit 0; sleep 0.1; done; exit 1"
    job = submit_job(user, job_text("calm", role("worker", command), extra="defaults: {virtualCluster: gpu}\n"))
    job = run_until(job, condition=lambda: job.tasks.exclude(executor_id="").exists())
    slurm_cluster.restart_slurmctld()
    slurm_vc_work_dir(job.tasks.get()).joinpath("go").touch()
    job = run_until(job, "SUCCEEDED", "FAILED")
    assert job.state == "SUCCEEDED" and job.job_attempt == 1
    assert len(slurm_cluster.slurm_jobs(slurm_name(job, 1))) == 1


def test_it_passes_the_time_limit_to_slurm_and_ends_the_job_at_it(slurm_cluster, slurm_vc, user, run_until):
    text = job_text("limited", role("worker", "exec sleep 306.1"), extra="defaults: {virtualCluster: gpu}\n")
    job = submit_job(user, text.replace("taskRoles:", "extras: {maxRunTimeMinutes: 0.05}\ntaskRoles:"))
    job = run_until(job, condition=lambda: job.tasks.exclude(executor_id="").exists())
    # Slurm keeps limits in minutes: 3 s is its 1 minute.
    assert slurm_cluster.run("squeue", "--noheader", f"--name={slurm_name(job, 1)}", "--format=%l").strip() == "1:00"
    job = run_until(job, "FAILED")
    assert job.exit_code == -1230 and "time limit of 3 s" in job.exit_diagnostics
    assert slurm_cluster.wait_until_idle(timeout=10) == []


def test_it_maps_priority_classes_onto_slurms_nice(slurm_cluster, slurm_vc, user, run_until):
    nices = {}
    for name in ("prod", "oppo"):
        text = job_text(name, role("worker", "exec sleep 306.2"), extra="defaults: {virtualCluster: gpu}\n")
        job = submit_job(user, text.replace("taskRoles:", f"jobPriorityClass: {name}\ntaskRoles:"))
        job = run_until(job, condition=lambda job=job: job.tasks.exclude(executor_id="").exists())
        squeue = slurm_cluster.run("squeue", "--noheader", f"--name={slurm_name(job, 1)}", "--format=%y")
        nices[name] = int(squeue.strip())
        stop_job(job, user)
        run_until(job, "STOPPED")
    assert nices == {"prod": 20, "oppo": 121}  # the higher class, the lower nice


def test_a_slurm_vc_never_lends_its_quota(slurm_vc, settings):
    from clusters.models import Node
    from scheduling.quota import cluster_usage, lends

    settings.PAI_LEND_IDLE_QUOTA = True
    type(slurm_vc).objects.filter(pk=slurm_vc.pk).update(lends_idle_quota=True)
    slurm_vc.refresh_from_db()
    assert not lends(slurm_vc)
    assert not cluster_usage(list(Node.objects.all())).vcs[slurm_vc.name].lends


def test_a_job_slurm_refuses_ends_failed_with_slurms_words_and_is_not_resubmitted(
    slurm_cluster, slurm_vc, user, run_until
):
    job = submit_job(user, job_text("toobig", role("worker", "true", gpu=5), extra="defaults: {virtualCluster: gpu}\n"))
    job = run_until(job, "FAILED", timeout=30)
    assert job.exit_code == -1100, (job.exit_code, job.exit_diagnostics)
    assert "Slurm refuses the job" in job.exit_diagnostics or "Slurm cannot run the job" in job.exit_diagnostics
    assert "ended its job" not in job.exit_diagnostics
    assert len(slurm_cluster.slurm_jobs(f"{job.pk}")) <= 1
