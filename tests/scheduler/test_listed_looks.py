"""A node's full look (its event stream open) lists the engine's
running containers in one call and takes the listing's word for them, but for those whose end the
stream gathered (dockerd 20.10 lists a container running for a moment after its `die`); the look
after a stream (re)opened lists too, and comes again once that moment has passed; while the stream
is not open every task is inspected. The engine is bench/fake_docker.py's."""

from __future__ import annotations

import json
import time

import pytest

from clusters.executors.docker import DockerExecutor
from clusters.executors.docker_events import LISTING_LAG_S, ExitWatch
from tests.scheduler.fake_engine import FakeEngine


@pytest.fixture
def watched(engine_with) -> tuple[FakeEngine, DockerExecutor]:
    """An executor whose event stream is open and whose first look after the open was made."""
    engine = engine_with()
    executor = DockerExecutor(engine.url)
    deadline = time.monotonic() + 10
    while executor.exits_seen() is None or not executor.exits._open:
        assert time.monotonic() < deadline, "the event stream did not open"
        time.sleep(0.01)
    return engine, executor


def periodic_look(executor: DockerExecutor) -> set[str] | None:
    executor.exits._next_full = 0.0  # (the look falls due)
    assert executor.exits_seen() is None
    return executor.running_listed()


def test_it_vouches_for_every_running_container_in_one_listing_in_a_periodic_look(watched):
    engine, executor = watched
    before = engine.calls()
    assert periodic_look(executor) == set(engine.containers)
    after = engine.calls()
    assert after["list containers"] - before.get("list containers", 0) == 1
    assert after.get("inspect", 0) == before.get("inspect", 0)


def test_it_does_not_vouch_for_a_listed_container_whose_end_its_stream_saw(watched):
    engine, executor = watched
    ended = engine.containers[3]
    executor.exits._note(json.dumps({"Action": "die", "Actor": {"ID": ended}}).encode())  # (listed still: the lag)
    assert periodic_look(executor) == set(engine.containers) - {ended}


def test_it_looks_again_a_moment_after_the_look_that_followed_its_streams_opening(engine_with):
    engine = engine_with()
    executor = DockerExecutor(engine.url)
    deadline = time.monotonic() + 10
    while not executor.exits._open:
        executor.exits_seen(may_look_in_full=False)  # (asks for the stream, keeps its look due)
        assert time.monotonic() < deadline, "the event stream did not open"
        time.sleep(0.01)
    assert executor.exits_seen() is None
    assert executor.running_listed() == set(engine.containers)
    assert executor.exits._next_full <= time.monotonic() + LISTING_LAG_S  # (a container listed in its lag)


def test_it_vouches_for_none_while_its_stream_is_not_open():
    watch = ExitWatch("ssh://nowhere", "pai", "pai.portal")  # (an engine whose stream is never followed)
    assert watch.seen() is None
    assert watch.listing_vouches({"abc"}) is None
