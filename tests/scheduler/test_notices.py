"""A scheduler on another machine than the web hears users' changes through PostgreSQL's NOTIFY
(scheduling/notices.py): its idle wait ends at a submit it could never hear through this machine's
bells, and a listening connection the database dropped is opened again."""

import time

import pytest
from django.db import connection

from clusters.executors.bells import Bell
from jobs.actions import submit_job
from scheduling import notices
from scheduling.notices import Notices
from tests.factories import v2_yaml

pytestmark = pytest.mark.django_db(transaction=True)

LONG_WAIT_S = 30.0  # (a wait that ran out was not woken)


@pytest.fixture
def elsewhere(scheduler, monkeypatch):
    """The scheduler as if on another machine than the web: no ring of this machine reaches it,
    and it holds `Notices` as runscheduler does."""
    if connection.vendor != "postgresql":
        pytest.skip("needs PostgreSQL (CI's PostgreSQL run)")
    monkeypatch.setattr("jobs.wake.ring_listeners", lambda directory: None)
    own = Bell()
    monkeypatch.setattr("scheduling.idle.bell", lambda: own)
    listening = scheduler.waiter.notices = Notices()
    scheduler.idle_wait(0)  # (listening from its first idle wait)
    yield scheduler
    listening.close()
    own.close()


def waited(scheduler) -> float:
    started = time.monotonic()
    scheduler.idle_wait(LONG_WAIT_S)
    return time.monotonic() - started


def test_a_submit_on_another_machine_ends_the_idle_wait(user, process_node, elsewhere):
    submit_job(user, v2_yaml("heard"))
    assert waited(elsewhere) < LONG_WAIT_S / 2


def test_a_listening_connection_the_database_dropped_is_opened_again(
    user, process_node, elsewhere, postgresql_admin, monkeypatch
):
    monkeypatch.setattr(notices, "RETRY_S", 0.0)
    dropped = postgresql_admin.execute(
        "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity"
        " WHERE datname = current_database() AND query = 'LISTEN pai_scheduler'"
    ).fetchone()
    assert dropped == (1,)
    elsewhere.idle_wait(0.5)  # (it finds its connection lost)
    elsewhere.idle_wait(0)  # (and listens again)
    submit_job(user, v2_yaml("heard"))
    assert waited(elsewhere) < LONG_WAIT_S / 2
