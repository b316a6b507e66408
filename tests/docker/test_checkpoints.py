"""Work survives every way a job is ended on a Docker node (real containers, the real scheduler
loop): preempted, stopped by its user or at its time limit, a task's SIGTERM trap runs a program
that takes seconds to save a checkpoint (tests/checkpoints.py), and the next attempt finds it.
The engine signals the container's main process once (docker-init passes it to the task's bash):
what the trap starts afterwards is never signalled."""

import time

import pytest

from jobs.actions import restart_job, stop_job, submit_job
from jobs.models import Job, JobState
from jobs.protocol.exitspec import ExitCode
from jobs.storage import areas as storage
from tests.checkpoints import SAVED, checkpointing_job, trace
from tests.factories import v2_yaml

pytestmark = [pytest.mark.docker, pytest.mark.django_db, pytest.mark.slow]

# The docker_node fixture's node has 16 CPUs: the default VC's whole quota.
PROD = "jobPriorityClass: prod\n"


@pytest.fixture
def saver(user, docker_node):
    storage.user_area(user.username)  # (the containers write their trace and checkpoint there)
    return user


def started(job: Job, scheduler, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while trace("alice", job.name) != ["start resumed=false"]:
        assert time.monotonic() < deadline, trace("alice", job.name)
        scheduler.run_once()
        time.sleep(0.1)


def test_a_preempted_tasks_trap_saves_a_checkpoint_its_resumed_attempt_finds(saver, run_until, scheduler):
    victim = run_until(submit_job(saver, checkpointing_job("train", cpu=12)), JobState.RUNNING)
    started(victim, scheduler)
    urgent = run_until(submit_job(saver, v2_yaml("urgent", "sleep 1", cpu=8, extra=PROD)), JobState.RUNNING)
    assert trace("alice", "train") == SAVED
    run_until(urgent, JobState.SUCCEEDED)
    victim = run_until(victim, JobState.SUCCEEDED)  # resumed once the prod job is done
    assert trace("alice", "train") == [*SAVED, "found step-42 resumed=true"]
    assert victim.preemptions == 1


def test_a_stopped_tasks_trap_saves_a_checkpoint_its_next_attempt_finds(saver, run_until, scheduler):
    job = run_until(submit_job(saver, checkpointing_job("stopme")), JobState.RUNNING)
    started(job, scheduler)
    stop_job(job, saver)
    job = run_until(job, JobState.STOPPED)
    assert trace("alice", "stopme") == SAVED
    restart_job(job, saver)
    run_until(job, JobState.SUCCEEDED)
    assert trace("alice", "stopme") == [*SAVED, "found step-42 resumed=false"]


def test_a_timed_out_tasks_trap_saves_a_checkpoint_its_next_attempt_finds(saver, run_until, scheduler):
    job = submit_job(saver, checkpointing_job("limited", extras="  maxRunTimeMinutes: 0.1\n"))  # 6 s
    started(run_until(job, JobState.RUNNING), scheduler)
    job = run_until(job, JobState.FAILED)
    assert job.exit_code == ExitCode.TIME_LIMIT_EXCEEDED
    assert trace("alice", "limited") == SAVED
    restart_job(job, saver)
    run_until(job, JobState.SUCCEEDED)
    assert trace("alice", "limited") == [*SAVED, "found step-42 resumed=false"]
