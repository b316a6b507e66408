"""What expected starts take a job to run and a preempted job to end (scheduling.sharing.RunTimes):
recent jobs' share of their time limits (the owner's, else the VC's, else the cluster's; for a job
that has run a while, of those that ran longer), and how long preempted jobs took to end after
their SIGTERM."""

import time
from datetime import timedelta

import pytest
from django.utils import timezone

from catalogue import Message
from jobs.lifecycle import event
from jobs.models import Job, JobState
from scheduling.sharing import RunTimes, median_over, preemption_starts
from tests.factories import create_job


def ran(owner, shares: list[float], limit_s: int = 600, **fields) -> None:
    """Jobs of `owner` that ended a minute ago, each having run its share of its time limit."""
    ended = timezone.now() - timedelta(minutes=1)
    for number, share in enumerate(shares):
        launched = ended - timedelta(seconds=share * limit_s)
        create_job(
            owner,
            f"ran-{number}",
            state=JobState.SUCCEEDED,
            time_limit_seconds=limit_s,
            launched_at=launched,
            completed_at=ended,
            **fields,
        )


def test_median_over_takes_the_median_of_the_samples_over_the_least():
    assert median_over([0.2, 0.4, 0.6, 0.8], 0) == pytest.approx(0.5)
    assert median_over([0.2, 0.4, 0.6, 0.8], 0.5) == pytest.approx(0.7)
    assert median_over([0.2, 0.4], 0.5) is None


def test_a_job_that_ran_past_most_of_its_owners_is_expected_to_run_as_the_longer_ones_did(db, user):
    ran(user, [0.3, 0.4, 0.5, 0.9])
    times = RunTimes()
    assert times.share("default", user.username) == pytest.approx(0.45)
    assert times.share("default", user.username, ran=0.6) == pytest.approx(0.9)
    assert times.share("default", user.username, ran=0.95) is None


def test_a_vc_where_no_job_ended_takes_the_clusters_run_times(db, user):
    ran(user, [0.4, 0.4, 0.4])
    assert RunTimes().share("empty-vc", "nobody") == pytest.approx(0.4)


def test_a_preempted_job_is_expected_to_end_as_preempted_jobs_lately_did(db, user):
    for number, took_s in enumerate([4, 6, 8]):
        victim = create_job(user, f"victim-{number}")
        event(victim.pk, "preempted", Message.of("event.requeued", who="x"))
        row = victim.events.get()
        row.created_at -= timedelta(seconds=took_s)
        row.save()
        event(victim.pk, "requeued", Message.of("event.requeued", who="x"))
    assert RunTimes().exit_s(0.0) == pytest.approx(6, abs=0.5)


def test_a_job_that_preempts_is_expected_when_its_victims_are_expected_to_end_not_at_their_deadline(db, user):
    times = RunTimes()
    times._exits, times._read_at = [10.0], time.monotonic()  # (preempted jobs lately ended 10 s after SIGTERM)
    preemptor = create_job(user, "preemptor")
    victim = create_job(
        user,
        "victim",
        state=JobState.RUNNING,
        ending_cause=Job.Ending.PREEMPTION,
        ending_by=preemptor,
        ending_deadline=timezone.now() + timedelta(seconds=30),
    )
    event(victim.pk, "preempted", Message.of("event.requeued", who="x"))
    began = victim.events.get().created_at.timestamp()
    now = time.time()
    assert preemption_starts({preemptor.pk}, times, now)[preemptor.pk] == pytest.approx(began + 10, abs=0.5)
    assert preemption_starts({preemptor.pk})[preemptor.pk] == pytest.approx(now + 30, abs=1)  # (its deadline)
