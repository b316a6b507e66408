"""scripts/gpu_check.py's sandbox part, with no GPU: what it checks on a GPU machine holds here."""

from jobs.models import JobState
from scripts import gpu_check


def test_it_finds_a_users_job_ran_in_the_sandbox(submit, scheduler, user, process_node):
    executor = gpu_check.process_executor(process_node)
    assert executor is not None and executor.sandbox_problem is None
    job = submit(gpu_check.job_text("sandboxed", gpus=0, commands=gpu_check.WHERE_AM_I))
    gpu_check.run_to_the_end(scheduler, [job], timeout_s=30)
    outcome = gpu_check.outcome_of(job)
    assert outcome.state == JobState.SUCCEEDED, outcome.log
    checks = gpu_check.sandbox_checks("alice", outcome, gpu_check.sandbox_uid(executor, user))
    assert all(checks.values()), (checks, outcome.log)


def test_it_reads_a_gpu_jobs_outcome_from_its_log():
    log = "CUDA_VISIBLE_DEVICES=3 NVIDIA_VISIBLE_DEVICES=3\ntorch sees 1 NVIDIA H200\n"
    outcome = gpu_check.Outcome(state="SUCCEEDED", exit_code=0, gpus=[3], log=log, diagnostics="")
    assert all(gpu_check.gpu_job_checks("alice", outcome, {3: "NVIDIA H200"}).values())
    assert not all(gpu_check.gpu_job_checks("alice", outcome, {3: "NVIDIA H100 80GB HBM3"}).values())
