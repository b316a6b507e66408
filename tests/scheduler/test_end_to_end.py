"""Jobs submitted through jobs.actions run on the process executor under the real scheduler loop."""

import time
import uuid
from pathlib import Path

from django.conf import settings

from clusters.executors.base import TaskHandle
from jobs.actions import stop_job
from jobs.models import JobState
from scheduling import ending, executors
from tests.conftest import processes_running
from tests.exposure import echo_hash_of, processes_showing, sha256_of, shared_files_holding
from tests.scheduler.conftest import role, v2_job


def test_it_runs_a_ps_and_two_workers_to_success(submit, run_until):
    roles = role("ps", "sleep 300") + role("worker", "echo worker $PAI_TASK_ROLE_INDEX", instances=2)
    job = run_until(submit(v2_job("tf", roles)), JobState.SUCCEEDED)
    tasks = {(t.role, t.index): t for t in job.tasks.all()}
    assert set(tasks) == {("ps", 0), ("worker", 0), ("worker", 1)}
    assert [(t.state, t.exit_code) for t in tasks.values() if t.role == "worker"] == [("SUCCEEDED", 0)] * 2
    # The workers' default minSucceededInstances (all of them) completes the job; ps is stopped.
    assert (tasks["ps", 0].state, tasks["ps", 0].exit_code) == ("STOPPED", -220)
    assert job.exit_code == 0


def test_it_fails_a_job_after_its_retries_are_used(submit, run_until):
    text = v2_job("flaky", role("worker", "exit 1"), extra="jobRetryCount: 2\n")
    job = run_until(submit(text), JobState.FAILED)
    assert job.retries_used == 2
    assert job.job_attempt == 3
    assert job.exit_code == 255
    assert job.user_exit_code == 1


def test_it_retries_a_task_within_its_task_retry_count(submit, run_until):
    task_role = role("worker", "exit 1", extra="    taskRetryCount: 1\n")
    job = run_until(submit(v2_job("task-retry", task_role)), JobState.FAILED)
    task = job.tasks.get()
    assert task.retries == 1
    assert task.attempt == 2
    assert job.job_attempt == 1


def test_it_does_not_retry_a_permanent_failure(submit, run_until):
    text = v2_job("perm", role("worker", "kill -ILL $$"), extra="jobRetryCount: 3\n")
    job = run_until(submit(text), JobState.FAILED)
    assert job.retries_used == 0
    assert job.exit_code == 132


def test_it_stops_a_running_job_and_leaves_no_process(submit, run_until, scheduler, user):
    job = run_until(submit(v2_job("stopme", role("worker", "setsid sleep 302.1 & exec sleep 302.2"))), "RUNNING")
    deadline = time.monotonic() + 10
    both = lambda: processes_running("sleep", "302.1") and processes_running("sleep", "302.2")  # noqa: E731
    while not both() and time.monotonic() < deadline:
        scheduler.run_once()
    assert both()
    stop_job(job, by=user)
    job = run_until(job, JobState.STOPPED)
    assert job.tasks.get().state == "STOPPED"
    assert processes_running("sleep", "302.1") == []
    assert processes_running("sleep", "302.2") == []


def test_a_task_that_obeys_its_sigterm_is_stopped_in_the_pass_that_signalled_it(
    submit, run_until, scheduler, user, monkeypatch
):
    job = run_until(submit(v2_job("prompt", role("worker", "exec sleep 302.4"))), "RUNNING")
    task = job.tasks.select_related("node").get()
    stop_job(job, by=user)
    real_ending = ending.run

    def ending_once_the_task_obeyed(*args, **kwargs):  # (the phases after the stop's take that long)
        handle, deadline = TaskHandle(task.executor_id, task.ip), time.monotonic() + 10
        while executors.node_executor(task.node).poll(handle).running and time.monotonic() < deadline:
            time.sleep(0.02)
        return real_ending(*args, **kwargs)

    monkeypatch.setattr(ending, "run", ending_once_the_task_obeyed)
    scheduler.run_once()

    job.refresh_from_db()
    assert (job.state, job.tasks.get().state) == (JobState.STOPPED, "STOPPED")


def test_it_keeps_a_job_too_big_for_its_vc_waiting_with_a_reason(submit, scheduler):
    job = submit(v2_job("huge", role("worker", "true", instances=3, cpu=4)))
    scheduler.run_once()
    job.refresh_from_db()
    assert job.state == JobState.WAITING
    assert "12" in job.pending_reason and "8" in job.pending_reason


def job_with_secret(secret: str, command: str) -> str:
    return v2_job("secretive", role("worker", command), extra=f"secrets:\n  token: {secret}\n")


def test_it_shows_a_jobs_secret_in_no_process_list_while_it_runs(submit, run_until, scheduler):
    secret = f"s3cret-{uuid.uuid4().hex}"
    job = submit(job_with_secret(secret, f"{echo_hash_of('<% $secrets.token %>')}; sleep 302.3; echo slept"))
    run_until(job, "RUNNING")
    deadline = time.monotonic() + 10
    while not processes_running("sleep", "302.3") and time.monotonic() < deadline:
        scheduler.run_once()
    assert processes_running("sleep", "302.3")
    try:
        assert processes_showing(secret) == []
    finally:
        stop_job(job, by=job.owner)
        run_until(job, JobState.STOPPED)


def test_it_keeps_a_printed_secret_in_files_only_the_portal_reads(submit, run_until, tmp_path):
    made = time.time() - 1  # (file times come from a coarser clock than time.time's)
    secret = f"s3cret-{uuid.uuid4().hex}"
    command = f"{echo_hash_of('<% $secrets.token %>')}; echo <% $secrets.token %>"
    job = run_until(submit(job_with_secret(secret, command)), JobState.SUCCEEDED)
    log = Path(job.tasks.get().log_path)
    assert sha256_of(secret) in log.read_text()  # the task had the value
    assert secret in log.read_text()  # (as printed: masked when served, jobs/logs.py)
    assert shared_files_holding(tmp_path, secret) == []  # its log
    assert shared_files_holding(settings.PAI_WORK_ROOT, secret) == []  # its work dir and task directory
    assert shared_files_holding(settings.VAR_DIR, secret, changed_since=made) == []
