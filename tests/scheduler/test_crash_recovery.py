"""A crash or a silent node never strands a job: the next pass (or the reconcile after a restart)
brings every job to where its tasks say it is."""

import time

import pytest

from catalogue import Message
from catalogue.reasons import stored_reason
from clusters.executors.base import ExecutorError, Failure, TaskHandle
from clusters.executors.process import ProcessExecutor
from clusters.models import Node
from jobs.models import JobState, TaskState
from scheduling import ending
from scheduling.executors import node_executor
from scheduling.scheduler import Scheduler
from tests.scheduler.conftest import role, v2_job

HEARTBEAT_S = 0.04


def wait_for_exit(task, timeout: float = 10.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        status = node_executor(task.node).poll(TaskHandle(task.executor_id, task.ip))
        if not status.running:
            return status
        time.sleep(0.02)
    raise AssertionError(f"{task} still running")


def test_it_finishes_a_job_whose_exit_was_recorded_just_before_a_crash(submit, run_until, scheduler):
    job = run_until(submit(v2_job("crashy", role("worker", "true"))), JobState.RUNNING)
    task = job.tasks.select_related("node", "job").get()
    # The pass records the exit, then dies before the completion policy runs (its lease ends).
    ending.record_exit(task, wait_for_exit(task))
    scheduler.release_lease()
    job.refresh_from_db()
    assert (job.state, job.tasks.get().state) == (JobState.RUNNING, TaskState.SUCCEEDED)
    restarted = Scheduler(holder="restarted")
    restarted.run_once()
    job.refresh_from_db()
    assert job.state == JobState.SUCCEEDED


@pytest.fixture
def silent_node(process_node, monkeypatch, settings):
    """The process node, whose heartbeat can be silenced (a unit stand-in for a dead engine;
    tests/docker/test_node_failures.py stops a real engine)."""
    settings.PAI_NODE_DOWN_AFTER_SECONDS = 0
    settings.PAI_NODE_HEARTBEAT_SECONDS = HEARTBEAT_S
    state = {"answers": True}

    def ping(self):
        if not state["answers"]:
            raise ConnectionError("engine gone")

    monkeypatch.setattr(ProcessExecutor, "ping", ping)
    return state


def test_it_marks_a_silent_node_down_and_requeues_its_jobs(submit, run_until, silent_node, scheduler):
    job = run_until(submit(v2_job("lost", role("worker", "sleep 300"))), JobState.RUNNING)
    silent_node["answers"] = False
    time.sleep(HEARTBEAT_S * 1.5)  # (a heartbeat is due)
    scheduler.run_once()
    job.refresh_from_db()
    node = Node.objects.get()
    assert (job.state, job.transient_retries) == (JobState.WAITING, 1)
    assert node.down_since is not None and "engine gone" in node.down_reason
    assert [part["code"] for part in node.down_reason_messages] == ["node.silent_for"]
    assert "node local is down" in job.pending_reason
    assert job.pending_reason_messages[-1]["code"] == "reason.node_down"
    attempt = job.attempts.get()
    assert (attempt.exit_code, attempt.node_name) == (-1001, "local")


def test_a_start_that_finds_the_nodes_engine_gone_marks_the_node_down_in_the_engines_words(
    submit, scheduler, process_node, monkeypatch
):
    def gone(self, launch):
        raise ExecutorError("could not create the task's container: the engine went away", Failure.NODE_LOST)

    monkeypatch.setattr(ProcessExecutor, "start", gone)
    submit(v2_job("unlucky", role("worker", "true")))
    scheduler.run_once()
    node = Node.objects.get()
    assert node.down_since is not None
    assert node.down_reason == "could not create the task's container: the engine went away"
    assert stored_reason(node.down_reason_messages) == [Message.of("node.said", said=node.down_reason)]


def test_it_takes_a_node_back_when_it_answers_again(submit, run_until, silent_node, scheduler):
    job = run_until(submit(v2_job("back", role("worker", "sleep 300"))), JobState.RUNNING)
    silent_node["answers"] = False
    time.sleep(HEARTBEAT_S * 1.5)  # (a heartbeat is due)
    scheduler.run_once()
    silent_node["answers"] = True
    time.sleep(HEARTBEAT_S * 1.5)  # (a heartbeat is due)
    job = run_until(job, JobState.RUNNING)
    assert Node.objects.get().down_since is None
    assert job.job_attempt == 2
