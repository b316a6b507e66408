"""Work survives every way a job is ended on a Slurm VC whose nodes have no Docker engine (tasks
run as sandboxed processes in Slurm's steps): a task's SIGTERM trap runs a program that takes
seconds to save a checkpoint (tests/checkpoints.py), and the next attempt finds it.

The portal's own ends (a user's Stop, its time limit) reach the task through its wrapper, as on a
process node: SIGTERM from the supervisor and the job's grace, then Slurm's scancel. Slurm's own
ends (its preemption, an admin's scancel, its time limit) signal every process of the step once,
then SIGKILL after KillWait; the sandbox's bwrap ignores that SIGTERM (it used to die of it, and
the whole sandbox with it, 0.2-1.1 s after the stop)."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from jobs.actions import restart_job, stop_job, submit_job
from jobs.models import Job
from jobs.protocol.exitspec import ExitCode
from tests.checkpoints import SAVED, checkpointing_job, trace
from tests.factories import create_user
from tests.slurm.test_slurm_jobs import slurm_name

pytestmark = [pytest.mark.slurm, pytest.mark.slow]

OWNER = "saver"


@pytest.fixture
def user(db):
    return create_user(OWNER)


def started(job: Job, run_until) -> Job:
    return run_until(job, condition=lambda: trace(OWNER, job.name) == ["start resumed=false"], timeout=60)


def logs(job: Job) -> list[str]:
    return [Path(task.log_path).read_text() for task in job.tasks.all() if Path(task.log_path).exists()]


def ended(job: Job, run_until, timeout: float = 60.0) -> Job:
    """Once SUCCEEDED or FAILED; what it did, should it not be."""
    try:
        return run_until(job, "SUCCEEDED", "FAILED", timeout=timeout)
    except AssertionError as exc:
        raise AssertionError(f"{exc}; {what_it_did(job)}") from None


def what_it_did(job: Job) -> str:
    """The job's end, attempts, trace and task logs, and its steps' own output."""
    from django.conf import settings

    job.refresh_from_db()
    root = Path(settings.PAI_WORK_ROOT)
    steps = {str(path.relative_to(root)): path.read_text() for path in [*root.rglob("*.out"), *root.rglob("exit_code")]}
    attempts = list(job.attempts.values_list("job_attempt", "exit_code", "exit_diagnostics"))
    ending = f"{job.state} {job.exit_code} {job.exit_diagnostics!r} {attempts}"
    return f"{ending}; trace {trace(OWNER, job.name)}; logs {logs(job)}; steps {steps}"


def test_a_stopped_tasks_trap_saves_a_checkpoint_its_next_attempt_finds(slurm_cluster, slurm_vc, user, run_until):
    job = started(submit_job(user, checkpointing_job("stopme", vc="gpu")), run_until)
    stop_job(job, user)
    job = run_until(job, "STOPPED")
    assert trace(OWNER, "stopme") == SAVED, logs(job)
    restart_job(job, user)
    job = ended(job, run_until)
    assert job.state == "SUCCEEDED", what_it_did(job)
    assert trace(OWNER, "stopme") == [*SAVED, "found step-42 resumed=false"], what_it_did(job)


def test_a_timed_out_tasks_trap_saves_a_checkpoint_its_next_attempt_finds(slurm_cluster, slurm_vc, user, run_until):
    job = submit_job(user, checkpointing_job("limited", vc="gpu", extras="  maxRunTimeMinutes: 0.2\n"))  # 12 s
    job = run_until(started(job, run_until), "FAILED")
    assert job.exit_code == ExitCode.TIME_LIMIT_EXCEEDED
    assert trace(OWNER, "limited") == SAVED, logs(job)
    restart_job(job, user)
    job = ended(job, run_until)
    assert job.state == "SUCCEEDED", what_it_did(job)
    assert trace(OWNER, "limited") == [*SAVED, "found step-42 resumed=false"], what_it_did(job)


def test_a_task_slurm_cancels_saves_a_checkpoint_its_retry_finds(slurm_cluster, slurm_vc, user, run_until):
    """Slurm's own end (an admin's scancel here): slurmd's SIGTERM to every process of the step,
    KillWait, SIGKILL, the path Slurm's preemption (PreemptMode=CANCEL) and its time limit take too.
    Slurm signals in its own order (proctrack/linuxproc: each child before its parent), where bash
    5.2 loses a trapped SIGTERM about once in six (docs/user/priorities.md says so): the task's program
    handles the signal itself here, and starts the same saving program."""
    job = started(submit_job(user, checkpointing_job("cancelled", vc="gpu", in_program=True)), run_until)
    began = time.monotonic()
    slurm_cluster.run("scancel", f"--name={slurm_name(job, 1)}")
    job = ended(job, run_until, timeout=90)
    assert trace(OWNER, "cancelled") == [*SAVED, "found step-42 resumed=false"], what_it_did(job)
    assert job.job_attempt == 2 and time.monotonic() - began < 30  # (not Slurm's KillWait: the trap's exit ends it)
