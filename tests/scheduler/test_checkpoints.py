"""Work survives every way a job is ended on a process node (real sandboxed tasks, the real
scheduler loop): preempted, stopped by its user or at its time limit, a task's SIGTERM trap runs
a program that takes seconds to save a checkpoint (tests/checkpoints.py), and the next attempt
finds it. The supervisor signals each process that runs when the stop comes, once: a program the
trap starts afterwards is never signalled (it used to be, at once, and died with rc 143)."""

import time
from pathlib import Path

import pytest

from jobs.actions import restart_job, stop_job
from jobs.models import Job, JobState
from jobs.protocol.exitspec import ExitCode
from tests.checkpoints import SAVED, checkpointing_job, trace
from tests.factories import v2_yaml

pytestmark = pytest.mark.slow

# The node of the process_node fixture has 8 CPUs: the default VC's whole quota.
PROD = "jobPriorityClass: prod\n"
TIME_LIMIT = "  maxRunTimeMinutes: 0.05\n"  # 3 s


def started(scheduler, job: Job, timeout: float = 20.0) -> None:
    deadline = time.monotonic() + timeout
    while trace("alice", job.name) != ["start resumed=false"]:
        if time.monotonic() > deadline:
            job.refresh_from_db()
            logs = [Path(task.log_path).read_text() for task in job.tasks.all() if Path(task.log_path).exists()]
            raise AssertionError(f"{job} {job.state} {job.pending_reason!r}: {trace('alice', job.name)}, {logs}")
        scheduler.run_once()
        time.sleep(0.05)


def test_a_preempted_tasks_trap_saves_a_checkpoint_its_resumed_attempt_finds(default_vc, submit, run_until, scheduler):
    victim = run_until(submit(checkpointing_job("train", cpu=6)), JobState.RUNNING)
    started(scheduler, victim)
    urgent = submit(v2_yaml("urgent", "sleep 1", cpu=4, extra=PROD))
    run_until(urgent, JobState.RUNNING)
    assert trace("alice", "train") == SAVED
    victim = run_until(victim, JobState.SUCCEEDED, timeout=30)  # resumed once the prod job is done
    assert trace("alice", "train") == [*SAVED, "found step-42 resumed=true"]
    assert victim.preemptions == 1


def test_a_stopped_tasks_trap_saves_a_checkpoint_its_next_attempt_finds(default_vc, submit, run_until, scheduler):
    job = run_until(submit(checkpointing_job("stopme")), JobState.RUNNING)
    started(scheduler, job)
    stop_job(job, job.owner)
    job = run_until(job, JobState.STOPPED)
    assert trace("alice", "stopme") == SAVED
    restart_job(job, job.owner)
    run_until(job, JobState.SUCCEEDED)
    assert trace("alice", "stopme") == [*SAVED, "found step-42 resumed=false"]


def test_a_timed_out_tasks_trap_saves_a_checkpoint_its_next_attempt_finds(default_vc, submit, run_until, scheduler):
    job = run_until(submit(checkpointing_job("limited", extras=TIME_LIMIT)), JobState.RUNNING)
    started(scheduler, job)
    job = run_until(job, JobState.FAILED, timeout=30)
    assert job.exit_code == ExitCode.TIME_LIMIT_EXCEEDED
    assert trace("alice", "limited") == SAVED
    restart_job(job, job.owner)
    run_until(job, JobState.SUCCEEDED)
    assert trace("alice", "limited") == [*SAVED, "found step-42 resumed=false"]
