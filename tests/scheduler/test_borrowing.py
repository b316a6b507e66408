"""Borrowing and reclaim across VCs with real sandboxed processes under the real scheduler loop:
an `oppo` job runs on a lending VC's idle quota, marked so, and is reclaimed (SIGTERM, its grace,
-1003, back to WAITING free of charge) when that VC's own job arrives, which then runs within the
grace and a pass; a VC that does not lend lends nothing; a borrowing gang is reclaimed whole."""

import time

import pytest

from clusters.models import VirtualCluster
from jobs.actions import stop_job
from jobs.models import Job, JobEvent, JobState, TaskAttempt
from jobs.protocol.exitspec import ExitCode
from tests.scheduler.conftest import passes_until
from tests.scheduler.test_preemption import SAVES_ON_SIGTERM, STUBBORN, trace
from tests.scheduler.test_preemption import yaml_job as cpu_job

pytestmark = pytest.mark.slow


def yaml_job(name: str, commands: list[str], *, cpu: int, gpu: int = 0, instances: int = 1, extra: str = "") -> str:
    return cpu_job(name, commands, cpu=cpu, instances=instances, extra=extra).replace("gpu: 0}", f"gpu: {gpu}}}")


@pytest.fixture
def vcs(default_vc, process_node):
    """VCs a and b, 4 of the node's 8 CPUs each; b lends its idle quota."""
    VirtualCluster.objects.filter(pk=default_vc.pk).update(share_percent=0)
    a = VirtualCluster.objects.create(name="a", share_percent=50)
    b = VirtualCluster.objects.create(name="b", share_percent=50, lends_idle_quota=True)
    return a, b


def in_vc(vc: str, priority: str = "", grace: int | None = None) -> str:
    text = f"defaults:\n  virtualCluster: {vc}\n"
    if priority:
        text += f"jobPriorityClass: {priority}\n"
    if grace is not None:
        text += f"extras:\n  gracePeriodSeconds: {grace}\n"
    return text


def fill_a(submit, run_until):
    """VC a's own quota held by a job of its own."""
    return run_until(submit(yaml_job("own-a", ["sleep 120"], cpu=4, extra=in_vc("a"))), JobState.RUNNING)


def end(run_until, *jobs: Job) -> None:
    for job in jobs:
        job.refresh_from_db()
        if job.state not in (JobState.STOPPED, JobState.SUCCEEDED, JobState.FAILED):
            stop_job(job, job.owner)
            run_until(job, JobState.STOPPED)


def test_it_runs_an_oppo_job_on_a_lending_vcs_idle_quota_and_reclaims_it_for_that_vcs_job(
    vcs, submit, run_until, scheduler, client, user
):
    own = fill_a(submit, run_until)
    borrower = submit(yaml_job("stubborn", STUBBORN, cpu=3, extra=in_vc("a", "oppo", grace=2)))
    run_until(borrower, JobState.RUNNING)
    assert borrower.borrowed_from.name == "b"
    assert "Running on VC b's idle quota" in JobEvent.objects.get(job=borrower, kind="borrowed").message
    client.force_login(user)
    assert client.get(f"/api/v2/jobs/{borrower.full_name}").json()["jobStatus"]["borrowedFrom"] == "b"
    assert 'data-job-borrowed="b"' in client.get(f"/jobs/{borrower.full_name}/").content.decode()
    passes_until(scheduler, lambda: trace("stubborn") == ["started"])
    # b's own job: b's quota (4 CPUs) holds only 1 beside the borrowed 3, so it takes them back.
    began = time.monotonic()
    owner = run_until(submit(yaml_job("owner-b", ["sleep 30"], cpu=4, extra=in_vc("b"))), JobState.RUNNING)
    took = time.monotonic() - began
    assert took < 2 + 3, took  # the borrower's grace (2 s: it ignores SIGTERM), then a pass (and slack)
    print(f"owner job of the lender ran {took:.2f} s after its submit (grace 2 s)")
    borrower.refresh_from_db()
    assert (borrower.state, borrower.borrowed_from, borrower.retries_used, borrower.preemptions) == (
        JobState.WAITING,
        None,
        0,
        1,
    )
    assert "ignored" in trace("stubborn")  # it had SIGTERM
    assert TaskAttempt.objects.get(job=borrower).exit_code == ExitCode.PREEMPTED_FOR_CRITICAL_POD
    event = JobEvent.objects.get(job=borrower, kind="preempted")
    assert "Preempted by job alice~owner-b of VC b, which takes back the idle quota it lent" in event.message
    assert owner.borrowed_from is None
    end(run_until, owner, borrower, own)


def test_it_lets_an_oppo_job_borrow_in_one_pass_while_its_vcs_test_head_waits_on_its_own_quota(
    vcs, submit, run_until, scheduler
):
    own = fill_a(submit, run_until)
    head = submit(yaml_job("testing", ["sleep 30"], cpu=2, extra=in_vc("a", "test")))  # (may not borrow)
    scheduler.run_once()
    borrower = submit(yaml_job("oppo", ["sleep 30"], cpu=3, extra=in_vc("a", "oppo")))
    scheduler.run_once()
    borrower.refresh_from_db()
    head.refresh_from_db()
    assert borrower.state == JobState.RUNNING and borrower.borrowed_from.name == "b"
    assert head.state == JobState.WAITING and 'VC "a" quota' in head.pending_reason
    end(run_until, borrower, head, own)


def test_it_lends_idle_gpus_and_takes_them_back(vcs, submit, run_until, scheduler, process_node):
    from clusters.models import Gpu, GpuType

    kind = GpuType.objects.create(name="T4")
    Gpu.objects.bulk_create(Gpu(node=process_node, index=i, gpu_type=kind) for i in range(4))  # 2 GPUs per VC
    own = run_until(submit(yaml_job("own-a", ["sleep 120"], cpu=1, gpu=2, extra=in_vc("a"))), JobState.RUNNING)
    borrower = submit(yaml_job("train", SAVES_ON_SIGTERM, cpu=1, gpu=2, extra=in_vc("a", "oppo")))
    run_until(borrower, JobState.RUNNING)
    assert borrower.borrowed_from.name == "b"
    assert sorted(index for task in (own, borrower) for index in task.tasks.get().gpus) == [0, 1, 2, 3]
    passes_until(scheduler, lambda: trace("train") == ["start resumed=false"])
    owner = run_until(submit(yaml_job("owner-b", ["sleep 30"], cpu=1, gpu=1, extra=in_vc("b"))), JobState.RUNNING)
    borrower.refresh_from_db()
    assert (borrower.state, borrower.preemptions) == (JobState.WAITING, 1)
    assert trace("train")[:2] == ["start resumed=false", "saved"]
    # Once b's job is done, b's GPUs are idle again: the borrower runs on them once more, resumed.
    stop_job(owner, owner.owner)
    run_until(borrower, JobState.RUNNING)
    assert borrower.borrowed_from.name == "b"
    passes_until(scheduler, lambda: trace("train")[2:] == ["start resumed=true"])
    end(run_until, borrower, own)


def test_it_borrows_nothing_from_a_vc_that_does_not_lend(vcs, submit, run_until, scheduler):
    VirtualCluster.objects.filter(name="b").update(lends_idle_quota=False)
    own = fill_a(submit, run_until)
    borrower = submit(yaml_job("hopeful", ["sleep 30"], cpu=3, extra=in_vc("a", "oppo")))
    for _ in range(5):
        scheduler.run_once()
    borrower.refresh_from_db()
    assert borrower.state == JobState.WAITING
    assert "no lending VC has that much idle quota" in borrower.pending_reason
    end(run_until, borrower, own)


def test_it_lends_to_no_class_but_oppo_by_default(vcs, submit, run_until, scheduler):
    own = fill_a(submit, run_until)
    job = submit(yaml_job("testing", ["sleep 30"], cpu=3, extra=in_vc("a", "test")))
    for _ in range(5):
        scheduler.run_once()
    job.refresh_from_db()
    assert job.state == JobState.WAITING and job.borrowed_from is None
    end(run_until, job, own)


def test_it_lends_to_the_classes_the_admin_names(vcs, submit, run_until, scheduler, settings):
    settings.PAI_BORROWING_CLASSES = ["oppo", "test"]
    own = fill_a(submit, run_until)
    job = run_until(submit(yaml_job("testing", ["sleep 30"], cpu=3, extra=in_vc("a", "test"))), JobState.RUNNING)
    assert job.borrowed_from.name == "b"
    end(run_until, job, own)


def test_it_reclaims_a_borrowing_gang_whole(vcs, submit, run_until, scheduler):
    own = fill_a(submit, run_until)
    gang = submit(yaml_job("gang", SAVES_ON_SIGTERM, cpu=1, instances=2, extra=in_vc("a", "oppo")))
    run_until(gang, JobState.RUNNING)
    passes_until(scheduler, lambda: trace("gang").count("start resumed=false") == 2)
    owner = submit(yaml_job("owner-b", ["sleep 30"], cpu=3, extra=in_vc("b")))  # (one task's room would do)
    run_until(owner, JobState.RUNNING)
    gang.refresh_from_db()
    assert gang.state == JobState.WAITING
    assert sorted(TaskAttempt.objects.filter(job=gang).values_list("index", "exit_code", "user_exit_code")) == [
        (0, ExitCode.PREEMPTED_FOR_CRITICAL_POD, 7),
        (1, ExitCode.PREEMPTED_FOR_CRITICAL_POD, 7),
    ]
    end(run_until, owner, gang, own)


def test_it_keeps_half_the_quota_for_the_owner_under_a_lending_limit_of_50_percent(vcs, submit, run_until, scheduler):
    VirtualCluster.objects.filter(name="b").update(lending_limit_percent=50)  # (b lends 2 of its 4 CPUs at most)
    own = fill_a(submit, run_until)
    lent = run_until(submit(yaml_job("lent", ["sleep 60"], cpu=2, extra=in_vc("a", "oppo"))), JobState.RUNNING)
    assert lent.borrowed_from.name == "b"
    refused = submit(yaml_job("refused", ["sleep 60"], cpu=1, extra=in_vc("a", "oppo")))
    for _ in range(3):
        scheduler.run_once()
    refused.refresh_from_db()
    assert refused.state == JobState.WAITING and "no lending VC has that much idle quota" in refused.pending_reason
    owner = run_until(submit(yaml_job("owner-b", ["sleep 60"], cpu=2, extra=in_vc("b"))), JobState.RUNNING)
    lent.refresh_from_db()
    assert (lent.state, lent.preemptions) == (JobState.RUNNING, 0)  # (the kept half was free: nothing reclaimed)
    end(run_until, refused, owner, lent, own)
