"""A scheduler waiting between idle passes is woken the moment there is work (bells.py): a task
ended (its supervisor rings the socket the scheduler listens on in the node's work root; a Docker
engine's event stream, another thread of its process, rings it directly), or a user's submit or
stop was committed (rung in PAI_WORK_ROOT); a ring never loses what it rings for."""

import os
import threading
import time

import pytest
from django.test import override_settings

from clusters.executors.bells import BELLS_DIR, Bell, ring_listeners
from jobs.actions import stop_job, submit_job
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


@pytest.fixture
def portal_bell(fresh_bell, tmp_path):
    """A bell listening where the portal rings for the users' changes (PAI_WORK_ROOT)."""
    with override_settings(PAI_WORK_ROOT=tmp_path):
        fresh_bell.listen(tmp_path)
        yield fresh_bell


def test_a_submit_rings_the_scheduler_once_it_is_committed(
    user, process_node, portal_bell, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=True):
        submit_job(user, v2_yaml("rung"))
        assert portal_bell.wait(0) is False
    assert portal_bell.wait(LONG_WAIT_S) is True


def test_a_stop_rings_the_scheduler(user, process_node, portal_bell, django_capture_on_commit_callbacks):
    job = submit_job(user, v2_yaml("stopped"))
    with django_capture_on_commit_callbacks(execute=True):
        stop_job(job, user)
    assert portal_bell.wait(LONG_WAIT_S) is True
