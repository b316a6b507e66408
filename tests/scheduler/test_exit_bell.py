"""A scheduler waiting between idle passes is woken the moment a task ends (exit_bell.py): by a
process task's supervisor through the socket it listens on in the node's work root, or by another
thread of its own process (a Docker engine's event stream); a ring never loses the exit itself."""

import os
import threading
import time

import pytest

from clusters.executors.exit_bell import BELLS_DIR, Bell, ring_listeners
from jobs.actions import submit_job
from jobs.models import JobState
from tests.factories import v2_yaml

# Far longer than any exit below takes to be seen: a wait that ran out was not woken.
LONG_WAIT_S = 30.0


@pytest.fixture
def fresh_bell():
    bell = Bell()
    yield bell
    bell.close()


def test_it_waits_the_whole_time_when_nothing_rings(fresh_bell):
    started = time.monotonic()
    assert fresh_bell.wait(0.05) is False
    assert time.monotonic() - started >= 0.05


def test_it_ends_a_wait_when_another_thread_rings(fresh_bell):
    threading.Timer(0.05, fresh_bell.ring).start()
    started = time.monotonic()
    assert fresh_bell.wait(LONG_WAIT_S) is True
    assert time.monotonic() - started < LONG_WAIT_S / 2


def test_it_takes_every_ring_so_far_with_the_wait_it_ends(fresh_bell):
    for _ in range(3):
        fresh_bell.ring()
    assert fresh_bell.wait(0) is True
    assert fresh_bell.wait(0) is False


def test_it_is_rung_by_a_supervisor_of_the_work_root_it_listens_in(fresh_bell, tmp_path):
    fresh_bell.listen(tmp_path)
    ring_listeners(str(tmp_path / BELLS_DIR))
    assert fresh_bell.wait(LONG_WAIT_S) is True


def test_it_removes_the_socket_of_a_listener_that_has_gone(tmp_path):
    gone = Bell()
    gone.listen(tmp_path)
    gone.close()  # (as when its process ended: its socket's file stays)
    assert (tmp_path / BELLS_DIR / f"{os.getpid()}.sock").exists()
    ring_listeners(str(tmp_path / BELLS_DIR))
    assert not (tmp_path / BELLS_DIR / f"{os.getpid()}.sock").exists()


def test_a_ring_where_nobody_ever_listened_is_no_error(tmp_path):
    ring_listeners(str(tmp_path / BELLS_DIR))


def test_it_records_a_process_tasks_exit_as_it_ends_not_at_the_end_of_the_idle_wait(
    user, process_node, scheduler, run_until
):
    job = run_until(submit_job(user, v2_yaml("sleeper", "sleep 0.5")), JobState.RUNNING)
    while scheduler.run_once():  # (the pass after its start did work too)
        pass
    started = time.monotonic()
    while job.state == JobState.RUNNING and time.monotonic() - started < LONG_WAIT_S:
        scheduler.idle_wait(LONG_WAIT_S)  # (an earlier test's task, ending late, may ring it first)
        scheduler.run_once()
        job.refresh_from_db()
    assert job.state == JobState.SUCCEEDED
    assert time.monotonic() - started < LONG_WAIT_S / 2
