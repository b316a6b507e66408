"""The phases hand work one way: the ending phase starts nothing (a task retried in place waits,
claimed and unstarted, for the starting phase) and the starting phase decides nothing (a failed
start waits for the next ending phase)."""

import time

import pytest

from clusters.executors.base import ExecutorError, Failure
from jobs.models import JobState, TaskState
from scheduling import ending, executors
from tests.scheduler.conftest import role, v2_job


def end_once_exited(scheduler, timeout: float = 10.0) -> ending.Ended:
    """The ending phase, run until it has seen an exit (a Docker engine's event may name a
    container a moment after an inspection finds it exited)."""
    deadline = time.monotonic() + timeout
    while not (ended := ending.run(scheduler.backends, [], set())).changed:
        assert time.monotonic() < deadline, "the task kept running"
        time.sleep(0.02)
    return ended


@pytest.fixture
def failing_starts(monkeypatch):
    """Every start on every node fails as an engine that cannot create the container would."""

    class Refusing:
        def __init__(self, real):
            self.real = real

        def __getattr__(self, name):
            return getattr(self.real, name)

        def start(self, launch):
            raise ExecutorError("no room for it", Failure.CREATE_FAILED)

    real = executors.node_executor
    monkeypatch.setattr(executors, "node_executor", lambda node: Refusing(real(node)))


def test_it_leaves_a_task_retried_in_place_claimed_and_unstarted(submit, run_until, scheduler):
    text = v2_job("retried", role("worker", "exit 1", extra="    taskRetryCount: 1\n"))
    job = run_until(submit(text), JobState.RUNNING)
    task = job.tasks.select_related("node").get()
    ended = end_once_exited(scheduler)
    task.refresh_from_db()
    assert (task.state, task.attempt, task.executor_id) == (TaskState.RUNNING, 2, "")
    assert ended.retried == {(task.pk, 2)}


def test_the_starting_phase_starts_what_the_ending_phase_retried(submit, run_until, scheduler):
    text = v2_job("retried", role("worker", "exit 1", extra="    taskRetryCount: 1\n"))
    job = run_until(submit(text), JobState.RUNNING)
    task = job.tasks.select_related("node").get()
    ended = end_once_exited(scheduler)
    assert scheduler.starter.start_unstarted(ended.retried)
    task.refresh_from_db()
    assert task.attempt == 2 and task.executor_id != ""


def test_a_failed_start_waits_for_the_next_ending_phase(submit, scheduler, failing_starts):
    job = submit(v2_job("refused", role("worker", "true")))
    assert scheduler.run_once()  # busy: a failed start is waiting to be decided
    task = job.tasks.get()
    assert (task.state, task.executor_id) == (TaskState.RUNNING, "")
    assert [failed.task.pk for failed in scheduler.failed_starts] == [task.pk]


def test_the_next_ending_phase_decides_a_failed_start(submit, scheduler, failing_starts):
    job = submit(v2_job("refused", role("worker", "true")))
    scheduler.run_once()
    ending.run(scheduler.backends, scheduler.failed_starts, set())
    job.refresh_from_db()
    assert job.state == JobState.FAILED and scheduler.failed_starts == []
