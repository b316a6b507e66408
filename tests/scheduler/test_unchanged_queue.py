"""Placement is skipped while the queue is unchanged since the last one looked at it; a job that
joins the queue while a placement runs is placed by the next pass all the same. (It was not: the
placement recorded the queue as it stood after its own launches, that job included, and the passes
after it skipped placement until something else changed: a standby test's four jobs, submitted
while the first one started, waited out its 60 s with no reason given.) A placement's own launches
alone do not make the next pass place the rest of the queue again."""

from __future__ import annotations

import pytest

from clusters.models import Node
from jobs.actions import submit_job
from jobs.models import Job, JobState
from scheduling import placing
from scheduling.scheduler import Scheduler
from tests.scheduler.conftest import role, v2_job

pytestmark = pytest.mark.django_db


@pytest.fixture
def scheduler(quiet_engines) -> Scheduler:
    Node.objects.create(name="n0", address="10.0.0.1", cpus=8, memory_mb=8192)
    return Scheduler()


def test_it_places_a_job_submitted_while_a_placement_ran(scheduler, user, default_vc, monkeypatch):
    submit_job(user, v2_job("first", role("worker", "sleep 60")))
    place = placing.place

    def place_while_another_job_is_submitted(*args, **kwargs):
        monkeypatch.setattr(placing, "place", place)  # (once)
        placed = place(*args, **kwargs)
        submit_job(user, v2_job("meanwhile", role("worker", "sleep 60")))
        return placed

    monkeypatch.setattr(placing, "place", place_while_another_job_is_submitted)
    scheduler.run_once()
    scheduler.run_once()
    assert dict(Job.objects.values_list("name", "state")) == {"first": JobState.RUNNING, "meanwhile": JobState.RUNNING}


def test_it_skips_placement_while_the_queue_is_unchanged(scheduler, user, default_vc, monkeypatch):
    submit_job(user, v2_job("too-big", role("worker", "true", cpu=64)))
    scheduler.run_once()
    scheduler.run_once()  # (after a placement that wrote a reason, one more look)
    placements = []
    monkeypatch.setattr(placing, "place", lambda *args, **kwargs: placements.append(args))
    scheduler.run_once()
    assert placements == []


def test_it_places_the_rest_of_the_queue_once_when_its_own_launches_were_all_that_changed_it(
    scheduler, user, default_vc, monkeypatch
):
    for name in ("first", "second"):  # (the node's 8 CPUs hold one of them)
        submit_job(user, v2_job(name, role("worker", "sleep 60", cpu=8)))
    scheduler.run_once()
    assert Job.objects.get(name="first").state == JobState.RUNNING
    placements = []
    monkeypatch.setattr(placing, "place", lambda *args, **kwargs: placements.append(args))
    scheduler.run_once()
    assert placements == []
