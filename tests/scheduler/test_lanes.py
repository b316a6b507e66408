"""A node's lane (scheduling.executors): only an answer within its call's deadline is an answer; a
start has a deadline too, and one that runs past it is neither failed nor started again (its
container is adopted once it ends); the sampler's calls go on the lanes as well."""

from __future__ import annotations

import logging
import threading
import time
from typing import Any

import pytest

from catalogue import Message, joined
from clusters.executors.base import Executor, ExecutorError, Failure, ResourceSample, TaskHandle, TaskLaunch
from clusters.executors.registry import executor_for
from clusters.models import Node
from jobs.models import JobState, Task, TaskSample, TaskState
from scheduling import executors
from scheduling.executors import Bulkheaded, Lane, NodeSilent
from scheduling.sampler import Sampler
from tests.factories import create_job
from tests.messages import param
from tests.scheduler.conftest import role, v2_job

DEADLINE_S = 0.3


@pytest.fixture
def deadline(settings):
    settings.PAI_NODE_CALL_DEADLINE_SECONDS = DEADLINE_S


def late(seconds: float) -> Any:
    def call() -> str:
        time.sleep(seconds)
        return "answer"

    return call


class Held:
    """A call that answers once released: released after its caller gave up on it, its answer is
    late by construction, with no fixed sleep past the deadline to wait out."""

    def __init__(self) -> None:
        self.release = threading.Event()

    def __call__(self) -> str:
        assert self.release.wait(30), "never released"
        return "answer"


def answered_late(lane: Lane, what: str, deadline: float | None = None) -> None:
    """A call on the lane that its caller gives up on, answered once it has (the node goes silent)."""
    held = Held()
    with pytest.raises(NodeSilent):
        lane.call(what, held, deadline)
    held.release.set()
    until(lambda: not lane.busy())


def until(condition, timeout: float = 5.0) -> None:
    limit = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < limit, "timed out"
        time.sleep(0.01)


def test_it_counts_no_answer_that_came_after_its_deadline(deadline):
    lane = Lane("slow")
    held = Held()
    with pytest.raises(NodeSilent) as silent:
        lane.call("ping", held)
    # While the call runs on: whose lane, how long, the call and that it did not answer in time.
    said = silent.value.messages
    assert [part.code for part in said] == ["node.lane.silent", "node.lane.busy", "node.lane.last_error"]
    assert param(said[-1], "error") == [Message.of("node.lane.unanswered", call="ping", seconds=DEADLINE_S)]
    assert str(silent.value).startswith("node slow has not answered for ")
    held.release.set()
    until(lambda: not lane.busy())

    assert lane.last_answer is None and not lane.answering
    silence = lane.silence()
    assert [part.code for part in silence] == ["node.lane.silent", "node.lane.last_error"]
    assert param(silence[-1], "error", 0).code == "node.lane.late"
    assert "past its deadline" in joined(silence)
    assert lane.silent_for() >= DEADLINE_S  # (since the lane was made: the late answer was none)


def test_it_waits_no_longer_than_a_probe_for_a_node_that_answered_late(settings):
    # (a deadline well above the probe's wait, so a busy box's scheduling delay cannot blur the two)
    settings.PAI_NODE_CALL_DEADLINE_SECONDS = executors.PROBE_WAIT_S + 1.0
    lane = Lane("slow")
    answered_late(lane, "poll", deadline=0.05)  # (how late it was is not the point: that it was)

    asked = time.monotonic()
    held = Held()
    with pytest.raises(NodeSilent):
        lane.call("poll", held)
    assert time.monotonic() - asked < executors.PROBE_WAIT_S + 0.5  # (not the deadline's 1.2 s)
    held.release.set()


def test_a_probe_answered_within_the_deadline_brings_the_node_back(deadline):
    lane = Lane("slow")
    answered_late(lane, "ping", deadline=0.05)
    assert not lane.answering
    with pytest.raises(NodeSilent):  # (a probe: waited for briefly, but its answer is in time)
        lane.call("ping", late(executors.PROBE_WAIT_S + 0.05))
    until(lambda: not lane.busy())

    assert lane.answering and lane.last_answer is not None


class Unasked(Executor):
    """An engine no test means to ask about tasks: each such call fails the test."""

    def start(self, launch):
        raise AssertionError("start")

    def poll(self, handle):
        raise AssertionError("poll")

    def stop(self, handle, *, keep: bool = False) -> None:
        raise AssertionError("stop")

    def list_running(self):
        raise AssertionError("list_running")


class JobNetworks(Unasked):
    """A backend that gives each job a network of its own, and says on which thread it was asked."""

    def __init__(self) -> None:
        self.asked_on: list[threading.Thread] = []

    def job_network(self, job_id, job_name, tasks):
        self.asked_on.append(threading.current_thread())
        return {task: f"10.{job_id}.0.{number}" for number, task in enumerate(tasks, start=2)}

    def list_running(self):
        return []


def test_it_asks_the_node_executor_on_its_lane_with_the_callers_arguments(deadline):
    backend = JobNetworks()
    node = Bulkheaded(backend, Lane("n1"))

    assert node.prepare_job(7, "alice~job", [("worker", 0)], "192.0.2.1") == {("worker", 0): "10.7.0.2"}
    assert node.prepare_job(7, "alice~job", [("worker", 0)], "192.0.2.1", host_network=True) == {
        ("worker", 0): "192.0.2.1"
    }
    assert node.list_running() == []
    assert backend.asked_on and threading.current_thread() not in backend.asked_on


def test_a_job_spanning_nodes_gets_the_node_address_even_from_a_backend_with_job_networks():
    backend = JobNetworks()
    tasks = [("worker", 0), ("worker", 1)]

    assert backend.prepare_job(7, "alice~job", tasks, "192.0.2.1", host_network=True) == dict.fromkeys(
        tasks, "192.0.2.1"
    )
    assert backend.asked_on == []


# --- starts -----------------------------------------------------------------------------------


class HeldStarts(Executor):
    """The node's real executor, whose starts wait until released (an engine frozen between
    placement and the container's start); counts them."""

    def __init__(self, executor: Executor) -> None:
        self.executor = executor
        self.release = threading.Event()
        self.starts = 0
        self.ended = threading.Condition()
        self.finished = 0

    def __getattr__(self, name: str) -> Any:
        return getattr(self.executor, name)

    def start(self, launch: TaskLaunch) -> TaskHandle:
        with self.ended:
            self.starts += 1
        try:
            self.release.wait(30)
            return self.executor.start(launch)
        finally:
            with self.ended:
                self.finished += 1
                self.ended.notify_all()

    def release_all(self) -> None:
        """Let every held start go and wait until each has ended: one ending after the test would
        start a task nobody stops, holding the first ports of the node's range for the next tests
        (their starts failed as port conflicts)."""
        self.release.set()
        with self.ended:
            assert self.ended.wait_for(lambda: self.finished == self.starts, 30), "a held start never ended"

    def poll(self, handle):
        return self.executor.poll(handle)

    def stop(self, handle, *, keep: bool = False) -> None:
        self.executor.stop(handle, keep=keep)

    def list_running(self):
        return self.executor.list_running()


@pytest.fixture
def held_node(process_node, monkeypatch, deadline):
    held = HeldStarts(executor_for("process", process_node.address))
    node = Bulkheaded(held, Lane(process_node.name))
    monkeypatch.setattr(executors, "node_executor", lambda _node: node)
    yield held
    held.release_all()  # (before process_node stops the node's tasks)


def test_a_start_past_its_deadline_holds_no_pass_and_is_adopted_not_started_twice(
    held_node, submit, scheduler, run_until
):
    job = submit(v2_job("held", role("worker", "sleep 30")))
    began = time.monotonic()
    scheduler.run_once()
    assert time.monotonic() - began < 3 * DEADLINE_S + 1.0
    task = Task.objects.get(job=job)
    assert (task.state, task.executor_id, held_node.starts) == (TaskState.RUNNING, "", 1)
    scheduler.run_once()  # (its start still runs: neither failed nor started again)
    assert held_node.starts == 1 and Task.objects.get(pk=task.pk).executor_id == ""

    held_node.release.set()
    limit = time.monotonic() + 20
    while not Task.objects.get(pk=task.pk).executor_id:
        assert time.monotonic() < limit, "the held start was never adopted"
        scheduler.run_once()
        time.sleep(0.05)

    task.refresh_from_db()
    assert held_node.starts == 1 and task.attempt == 1 and task.state == TaskState.RUNNING
    assert len(held_node.list_running()) == 1
    assert job.attempts.count() == 0


def test_an_ordinary_slow_start_is_logged_as_info_not_as_a_warning(held_node, submit, scheduler, caplog):
    """Issue 50: `make run` printed 84 WARNINGs of starts past 1 s for ~220 jobs on a busy box."""
    submit(v2_job("slow", role("worker", "sleep 30")))
    with caplog.at_level(logging.INFO, logger="pai.scheduler"):
        scheduler.run_once()
    pending = [record for record in caplog.records if "did not end within" in record.getMessage()]
    assert [record.levelno for record in pending] == [logging.INFO]


def test_a_start_past_its_deadline_on_a_node_that_stopped_answering_says_so(deadline):
    lane = Lane("silent")
    lane.answering = False
    with pytest.raises(executors.StartPending) as pending:
        lane.start("1/worker/0/1/1", late(1.0))
    assert not pending.value.node_answering


class LateRefusals(HeldStarts):
    """A node whose starts fail once released, past their deadline (a slow registry that has no
    such image)."""

    def start(self, launch: TaskLaunch) -> TaskHandle:
        self.starts += 1
        assert self.release.wait(30), "never released"
        raise ExecutorError(f"image {launch.image} not found", Failure.IMAGE_NOT_FOUND)


@pytest.fixture
def refusing_node(process_node, monkeypatch, deadline):
    refusing = LateRefusals(executor_for("process", process_node.address))
    node = Bulkheaded(refusing, Lane(process_node.name))
    monkeypatch.setattr(executors, "node_executor", lambda _node: node)
    return refusing


def test_a_start_that_fails_past_its_deadline_is_recorded_as_its_failure_not_started_again(
    refusing_node, submit, scheduler, run_until
):
    """Nobody waited for the start's outcome: it is kept for the pass that takes the task up
    again, which records it through the exit spec (254: never retried) instead of starting the
    task again on every pass."""
    job = submit(v2_job("no-image", role("worker", "true")))
    scheduler.run_once()  # (its start runs past the deadline: the pass goes on without its outcome)
    refusing_node.release.set()  # (the start fails now, late)
    job = run_until(job, JobState.FAILED)
    assert refusing_node.starts == 1
    assert job.exit_code == 254


# --- the sampler ------------------------------------------------------------------------------


class HungSample(Unasked):
    """An engine whose every call hangs until released."""

    def __init__(self) -> None:
        self.release = threading.Event()

    def __getattr__(self, name: str) -> Any:
        raise AssertionError(name)

    def sample(self, handles: list[TaskHandle]) -> dict[str, ResourceSample]:
        self.release.wait(30)
        return {}


class Answers(HungSample):
    def sample(self, handles: list[TaskHandle]) -> dict[str, ResourceSample]:
        return {handle.executor_id: ResourceSample(cpu_seconds=1, memory_bytes=2**20) for handle in handles}


class Removed(HungSample):
    """An executor that removed every container already: a stop asks its node nothing."""

    def __init__(self) -> None:
        super().__init__()
        self.stops = 0

    def stopped(self, handle: TaskHandle) -> bool:
        return True

    def stop(self, handle, *, keep: bool = False) -> None:
        self.stops += 1


def test_a_stop_of_a_container_removed_already_waits_for_no_lane(deadline):
    removed = Removed()
    lane = Lane("busy")
    node = Bulkheaded(removed, lane)
    lane.submit("sample", lambda: removed.sample([]))  # (the lane busy: a call there would be NodeSilent)
    node.stop(TaskHandle("c1", ""), keep=True)
    assert removed.stops == 1 and lane.busy()
    removed.release.set()
    until(lambda: not lane.busy())


@pytest.mark.django_db
def test_a_hung_engine_costs_the_sampler_one_round_once_and_the_other_nodes_nothing(user, settings, monkeypatch):
    settings.PAI_SAMPLE_SECONDS = 0.25
    settings.PAI_NODE_CALL_DEADLINE_SECONDS = 0.1
    hung, fine = (Node.objects.create(name=name, executor="docker", docker_url=f"tcp://{name}:2375") for name in "ab")
    for node in (hung, fine):
        job = create_job(user, f"on-{node.name}", state=JobState.RUNNING)
        Task.objects.filter(job=job).update(state=TaskState.RUNNING, node=node, executor_id=f"c-{node.name}")
    hanging = HungSample()
    per_node = {hung.pk: Bulkheaded(hanging, Lane("a")), fine.pk: Bulkheaded(Answers(), Lane("b"))}
    monkeypatch.setattr(executors, "node_executor", lambda node: per_node[node.pk])
    try:
        rounds = []
        for _ in range(2):
            began = time.monotonic()
            stored = Sampler(gpu_reader=dict).sample_once()
            rounds.append((time.monotonic() - began, stored))
    finally:
        hanging.release.set()

    assert rounds[0][0] < settings.PAI_SAMPLE_SECONDS + 0.5 and rounds[0][1] == 1
    assert rounds[1][0] < 0.3 and rounds[1][1] == 1
    assert set(TaskSample.objects.values_list("task__node__name", flat=True)) == {"b"}


def test_an_unreached_engines_error_is_kept_in_plain_words(deadline):
    import requests

    def refused():
        raise requests.exceptions.ConnectionError(
            "HTTPConnectionPool(host='10.0.0.2', port=2375): Max retries exceeded with url: /containers/json "
            "(Caused by NewConnectionError('<urllib3.connection.HTTPConnection object at 0x7f00>: Failed to "
            "establish a new connection: [Errno 111] Connection refused'))"
        )

    lane = Lane("gone")
    with pytest.raises(requests.exceptions.ConnectionError):
        lane.call("list_running", refused)
    assert lane.last_error == [Message.of("node.cause.refused")]  # ("connection refused: nothing listens there")
    assert "object at 0x" not in joined(lane.silence())


def test_it_gives_a_lane_only_to_nodes_whose_executor_calls_an_engine(process_node):
    engine_node = Node.objects.create(name="engine", executor="docker", address="10.0.0.9", cpus=8, memory_mb=8192)
    assert executors.lane_of(process_node) is None
    assert executors.lane_of(engine_node) is not None


class Slow(Executor):
    """An engine whose calls each take `seconds[i]` (called in turn by side_by_side), or less once
    released."""

    calls_an_engine = True

    def __init__(self, seconds: list[float]) -> None:
        self.seconds = seconds
        self.release = threading.Event()

    def ping(self) -> None:
        self.release.wait(self.seconds.pop(0))

    start = poll = stop = list_running = None  # type: ignore[assignment]  # (never called)


def pinged(executor: Executor) -> str:
    executor.ping()
    return "answer"


def test_calls_in_turn_on_a_lane_each_have_their_own_deadline(deadline, monkeypatch):
    """A node's polls sent as one lane call: three that each answer within a call's deadline are
    answers, although together they take longer than one; past one that does not answer in time,
    the calls answered are kept and the rest are the node's silence."""
    node = Node(pk=1, name="slow", executor="docker")
    answering = Bulkheaded(Slow([DEADLINE_S * 0.4] * 3), Lane("slow"))  # (1.2 deadlines together)
    monkeypatch.setattr(executors, "node_executor", lambda node: answering)
    results = executors.side_by_side({node: [pinged] * 3}, "ping")
    assert results == {1: ["answer"] * 3}
    assert answering.lane.answering

    hung = Slow([0.01, 30, 0.01])  # (the second call answers once released, past its deadline)
    hanging = Bulkheaded(hung, Lane("hanging"))
    monkeypatch.setattr(executors, "node_executor", lambda node: hanging)
    results = executors.side_by_side({node: [pinged] * 3}, "ping")
    assert results[1][0] == "answer"
    assert [type(result) for result in results[1][1:]] == [NodeSilent, NodeSilent]
    assert not hanging.lane.answering
    hung.release.set()
    until(lambda: not hanging.lane.busy())
