"""A scheduler waiting between idle passes is woken the moment there is work (bells.py): a task
ended (its supervisor rings the socket the scheduler listens on in the node's work root; a Docker
engine's event stream, another thread of its process, rings it directly), or a user's submit or
stop was committed (rung in PAI_WORK_ROOT); a ring never loses what it rings for."""

import os
import socket
import threading
import time

import pytest
from django.conf import settings
from django.test import override_settings

from clusters.executors.bells import BELLS_DIR, CHANGES, EXITS, Bell
from clusters.executors.rings import ring_listeners
from jobs.actions import stop_job, submit_job
from jobs.models import JobState
from scheduling.lease import Lease
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
    assert fresh_bell.wait(0.05) == set()
    assert time.monotonic() - started >= 0.05


def test_it_ends_a_wait_when_another_thread_rings(fresh_bell):
    threading.Timer(0.05, fresh_bell.ring).start()
    started = time.monotonic()
    assert fresh_bell.wait(LONG_WAIT_S) == {EXITS}
    assert time.monotonic() - started < LONG_WAIT_S / 2


def test_it_takes_every_ring_so_far_with_the_wait_it_ends(fresh_bell):
    for _ in range(3):
        fresh_bell.ring()
    assert fresh_bell.wait(0) == {EXITS}
    assert fresh_bell.wait(0) == set()


def test_it_is_rung_by_a_supervisor_of_the_work_root_it_listens_in(fresh_bell, tmp_path):
    fresh_bell.listen(tmp_path)
    ring_listeners(str(tmp_path / BELLS_DIR))
    assert fresh_bell.wait(LONG_WAIT_S) == {EXITS}


def test_it_removes_the_socket_of_a_listener_that_has_gone(tmp_path):
    gone = Bell()
    gone.listen(tmp_path)
    gone.close()  # (as when its process ended: its socket's file stays)
    assert len(list((tmp_path / BELLS_DIR).iterdir())) == 1
    ring_listeners(str(tmp_path / BELLS_DIR))
    assert list((tmp_path / BELLS_DIR).iterdir()) == []


def test_it_leaves_alone_the_sockets_of_another_machine_sharing_the_work_root(tmp_path):
    bells = tmp_path / BELLS_DIR
    bells.mkdir()
    folder = os.open(bells, os.O_RDONLY)
    with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as elsewhere:  # (closed: it refuses, as another machine's)
        elsewhere.bind(f"/proc/self/fd/{folder}/another-machine.4242.sock")  # (no path length limit)
    os.close(folder)
    ring_listeners(str(bells))
    assert (bells / "another-machine.4242.sock").exists()


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
        fresh_bell.listen(tmp_path, rings_for=CHANGES)
        yield fresh_bell


def test_a_submit_rings_the_scheduler_once_it_is_committed(
    user, process_node, portal_bell, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=True):
        submit_job(user, v2_yaml("rung"))
        assert portal_bell.wait(0) == set()
    assert portal_bell.wait(LONG_WAIT_S) == {CHANGES}


def test_a_submit_rings_where_the_work_root_is_a_string_setting(
    user, process_node, fresh_bell, tmp_path, django_capture_on_commit_callbacks
):
    fresh_bell.listen(tmp_path, rings_for=CHANGES)
    with override_settings(PAI_WORK_ROOT=str(tmp_path)), django_capture_on_commit_callbacks(execute=True):
        submit_job(user, v2_yaml("rung"))
    assert fresh_bell.wait(LONG_WAIT_S) == {CHANGES}


def test_a_stop_rings_the_scheduler(user, process_node, portal_bell, django_capture_on_commit_callbacks):
    job = submit_job(user, v2_yaml("stopped"))
    with django_capture_on_commit_callbacks(execute=True):
        stop_job(job, user)
    assert portal_bell.wait(LONG_WAIT_S) == {CHANGES}


@pytest.fixture
def paced(scheduler, portal_bell, monkeypatch):
    """The scheduler on a bell of its own (no other test's ring reaches it), its last pass as if
    it ended now, and a user's change not due for PACE_S."""
    monkeypatch.setattr("scheduling.idle.bell", lambda: portal_bell)
    scheduler.waiter.changes_due = time.monotonic() + PACE_S
    return scheduler


PACE_S = 0.3


def test_a_users_change_ends_the_idle_wait_no_sooner_than_its_pace_after_the_last_pass(paced):
    ring_listeners(str(settings.PAI_WORK_ROOT / BELLS_DIR))
    started = time.monotonic()
    paced.idle_wait(LONG_WAIT_S)
    assert PACE_S * 0.9 <= time.monotonic() - started < LONG_WAIT_S / 2


def test_a_users_change_does_not_wake_a_standby(db, scheduler, portal_bell, monkeypatch):
    monkeypatch.setattr("scheduling.idle.bell", lambda: portal_bell)
    assert Lease("the-active-scheduler").take()
    assert not scheduler.run_once()  # (the lease is another's)
    ring_listeners(str(settings.PAI_WORK_ROOT / BELLS_DIR))
    started = time.monotonic()
    scheduler.idle_wait(PACE_S)
    assert time.monotonic() - started >= PACE_S * 0.9


def test_an_exit_ends_the_idle_wait_at_once_whatever_the_pace(paced, portal_bell):
    portal_bell.ring()
    started = time.monotonic()
    paced.idle_wait(LONG_WAIT_S)
    assert time.monotonic() - started < PACE_S
