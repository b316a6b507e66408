"""A Docker node's exits come from its engine's event stream: a pass inspects the containers that
died, not every running task; a stream that breaks is opened again, and an exit it missed is
still recorded, once."""

import time

import pytest

from clusters.executors import docker_events
from clusters.executors.docker import DockerExecutor
from clusters.executors.registry import executor_for
from clusters.models import Node
from jobs.actions import submit_job
from jobs.models import JobState, Task
from tests.docker.conftest import docker_cli
from tests.docker.engine_proxy import EngineProxy
from tests.factories import v2_yaml

pytestmark = pytest.mark.docker

# The task runs until the test lets it end (a file it waits for, made by `docker exec`).
WAIT_FOR_GO = "while [ ! -f /tmp/go ]; do sleep 0.1; done"
# Far longer than an exit takes to be seen: an idle wait that ran out was not woken by it.
LONG_WAIT_S = 30.0


@pytest.fixture
def no_full_looks(monkeypatch):
    """The low-rate full look put off beyond the test: what a pass inspects is the stream's doing."""
    monkeypatch.setattr(docker_events, "RECONCILE_S", 3600.0)


@pytest.fixture
def polled(monkeypatch):
    """The containers the node's executor inspects as polls, as they are asked for (the real polls)."""
    seen: list[str] = []

    def watch(node: Node) -> list[str]:
        executor = executor_for(node.executor, node.address, node.docker_url)
        real = executor.poll

        def poll(handle):
            seen.append(handle.executor_id)
            return real(handle)

        monkeypatch.setattr(executor, "poll", poll)
        return seen

    return watch


def run_passes_until(scheduler, done, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while not done():
        assert time.monotonic() < deadline, "not within the time"
        scheduler.run_once()
        time.sleep(0.1)


def watch_of(node: Node) -> docker_events.ExitWatch:
    executor = executor_for(node.executor, node.address, node.docker_url)
    assert isinstance(executor, DockerExecutor)
    return executor.exits


def following(scheduler, node: Node) -> bool:
    """A pass ran after the node's stream was opened and its full look done: exits come from events now."""
    watch = watch_of(node)
    scheduler.run_once()
    return watch.opened > 0 and watch.seen() is not None


def container_of(job) -> str:
    return Task.objects.get(job=job).executor_id


def test_an_exit_event_ends_the_schedulers_idle_wait(user, docker_node, scheduler, run_until, no_full_looks):
    job = run_until(submit_job(user, v2_yaml("woken", WAIT_FOR_GO)), JobState.RUNNING)
    run_passes_until(scheduler, lambda: following(scheduler, docker_node))
    docker_cli("exec", container_of(job), "touch", "/tmp/go")
    started = time.monotonic()
    while job.state == JobState.RUNNING and time.monotonic() - started < LONG_WAIT_S:
        scheduler.idle_wait(LONG_WAIT_S)  # (another test's task, ending late, may ring it first)
        scheduler.run_once()
        job.refresh_from_db()
    assert job.state == JobState.SUCCEEDED
    assert time.monotonic() - started < LONG_WAIT_S / 2


def test_it_records_an_exit_polling_only_the_container_that_died(
    user, docker_node, scheduler, run_until, polled, no_full_looks
):
    staying = run_until(submit_job(user, v2_yaml("staying", WAIT_FOR_GO)), JobState.RUNNING)
    ending = run_until(submit_job(user, v2_yaml("ending", WAIT_FOR_GO)), JobState.RUNNING)
    run_passes_until(scheduler, lambda: following(scheduler, docker_node))
    polls = polled(docker_node)
    for _ in range(3):
        scheduler.run_once()
    assert polls == []  # nothing died: nothing inspected

    docker_cli("exec", container_of(ending), "touch", "/tmp/go")
    run_until(ending, JobState.SUCCEEDED, timeout=20)
    assert container_of(staying) not in polls
    assert set(polls) == {container_of(ending)}
    staying.refresh_from_db()
    assert staying.state == JobState.RUNNING


@pytest.fixture
def proxy(docker_node, tmp_path):
    """The Docker node's engine reached through an EngineProxy."""
    proxy = EngineProxy(tmp_path / "engine.sock")
    Node.objects.filter(pk=docker_node.pk).update(docker_url=f"unix://{proxy.path}")
    docker_node.refresh_from_db()
    yield proxy
    proxy.close()


def test_it_opens_a_broken_event_stream_again_and_records_the_exit_it_missed_once(
    user, docker_node, proxy, scheduler, run_until, no_full_looks
):
    job = run_until(submit_job(user, v2_yaml("missed", WAIT_FOR_GO)), JobState.RUNNING)
    run_passes_until(scheduler, lambda: following(scheduler, docker_node))
    watch = watch_of(docker_node)
    assert watch.opened == 1

    proxy.break_streams()
    docker_cli("exec", container_of(job), "touch", "/tmp/go")
    docker_cli("wait", container_of(job))  # it died while no stream was open
    proxy.mend()
    job = run_until(job, JobState.SUCCEEDED, timeout=30)
    run_passes_until(scheduler, lambda: watch.opened == 2)
    assert watch.opened == 2
    assert job.events.filter(kind="task-exit").count() == 1
    assert Task.objects.get(job=job).exit_code == 0


def test_an_exit_costs_the_engine_one_inspection_and_one_removal_of_its_container(
    user, docker_node, proxy, scheduler, run_until, no_full_looks
):
    job = run_until(submit_job(user, v2_yaml("counted", WAIT_FOR_GO)), JobState.RUNNING)
    run_passes_until(scheduler, lambda: following(scheduler, docker_node))
    container = container_of(job)
    proxy.requests.clear()
    docker_cli("exec", container, "touch", "/tmp/go")
    run_until(job, JobState.SUCCEEDED, timeout=20)
    assert proxy.asked("GET", f"/containers/{container}/json") == 1  # the poll's; the removal asks no more
    assert proxy.asked("DELETE", f"/containers/{container}") == 1  # the task's stop; the job's finds it gone
    assert proxy.asked("POST", f"/containers/{container}/stop") == 0  # (it had exited: nothing to stop)
    assert proxy.asked("POST", f"/containers/{container}/kill") == 0
