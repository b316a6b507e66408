"""Stopping many jobs at once holds no one else up (issue 44, item 3): a sweep's Stop all is one
bulk update, and each scheduler pass does a bounded share of the stopping, in turns between the
users whose jobs stop; the runs that never started are stopped in bulk (nothing to signal). It used
to take every stopping job in one pass: Stop all of a 10,000-run sweep held the scheduler 25.8 s."""

from __future__ import annotations

import pytest

from jobs import lifecycle
from jobs.actions import submit_job
from jobs.models import Job, JobEvent, JobState, Task, TaskState
from jobs.sweeps import runs, stop_sweep, submit_sweep
from scheduling import stopping
from scheduling.backends import Backends
from scheduling.dependencies import judge_held_jobs
from scheduling.stopping import Stopper, fair_order
from tests.factories import create_jobs, v2_yaml
from tests.scheduler.test_sweeps import sweep_text


@pytest.fixture
def one_bulk_batch_a_pass(monkeypatch):
    """Passes that do the least: one bulk batch of 100 waiting jobs, one job stopped on its own."""
    monkeypatch.setattr(stopping, "UNSTARTED_BATCH", 100)
    monkeypatch.setattr(stopping, "STOP_BUDGET_S", 0.0)


def test_it_asks_every_run_of_a_sweep_to_stop_in_a_few_queries(user, default_vc, django_assert_max_num_queries):
    sweep = submit_sweep(user, sweep_text("{array: '0-39'}"))  # (five times the queries allowed)
    with django_assert_max_num_queries(8):
        assert stop_sweep(sweep, user) == 40
    assert set(runs(sweep).values_list("ending_cause", flat=True)) == {Job.Ending.STOP}
    assert JobEvent.objects.filter(kind="stop-requested").count() == 40


def test_it_stops_a_bounded_batch_of_waiting_jobs_a_pass_half_for_each_user(
    user, other_user, default_vc, one_bulk_batch_a_pass
):
    create_jobs(user, [f"alice-{i}" for i in range(300)])
    create_jobs(other_user, [f"bob-{i}" for i in range(300)])
    lifecycle.request_stops(Job.objects.all(), "admin")
    Stopper().carry_out(Backends())
    stopped = Job.objects.filter(state=JobState.STOPPED)
    assert stopped.filter(owner=user).count() == stopped.filter(owner=other_user).count() == 50
    assert not Job.objects.filter(state=JobState.STOPPING).exists()


def test_it_stops_waiting_runs_with_their_tasks_and_says_why(user, default_vc):
    sweep = submit_sweep(user, sweep_text("{array: '0-2'}"))
    stop_sweep(sweep, user)
    Stopper().carry_out(Backends())
    run = runs(sweep).first()
    assert run is not None
    assert (run.state, run.exit_code) == (JobState.STOPPED, -210)
    assert run.exit_diagnostics == "StopFrameworkRequested: stopped at the user's request."
    assert set(Task.objects.filter(job__sweep=sweep).values_list("state", flat=True)) == {TaskState.STOPPED}
    assert JobEvent.objects.filter(job=run, kind="stopped").count() == 1


def test_it_takes_stopping_jobs_in_turns_between_users_least_lately_looked_at_first():
    rows = [(1, 10), (2, 10), (3, 10), (4, 20), (5, 30), (6, 30)]
    assert fair_order(rows, {}) == [1, 4, 5, 2, 6, 3]
    assert fair_order(rows, {1: 1, 4: 1, 5: 1}) == [2, 6, 4, 3, 5, 1]


def test_another_users_job_starts_while_two_big_sweeps_are_still_being_stopped(
    user, other_user, admin_user, process_node, scheduler, one_bulk_batch_a_pass, monkeypatch
):
    # Each sweep four passes' batches, as its 400 runs were with batches of 100 (submitting 800
    # runs cost the test ~2 s of CPU; the proportions are what it proves).
    monkeypatch.setattr(stopping, "UNSTARTED_BATCH", 10)
    for owner in (user, other_user):
        stop_sweep(submit_sweep(owner, sweep_text("{array: '0-39', maxConcurrent: 1}", "sleep 60")), owner)
    probe = submit_job(admin_user, v2_yaml("probe", "echo probed"))
    for _ in range(3):
        scheduler.run_once()
        probe.refresh_from_db()
        if probe.launched_at is not None:
            break
    assert probe.launched_at is not None
    assert Job.objects.filter(sweep__isnull=False, state=JobState.WAITING).count() >= 40


def test_the_dependency_pass_leaves_a_held_job_asked_to_stop_to_the_stop_phase(user, default_vc):
    """Nothing to let it in for: judging 20,000 held runs of two stopping sweeps each pass was most
    of the pass."""
    create_jobs(user, ["held"])
    Job.objects.update(held=True)
    lifecycle.request_stops(Job.objects.all(), "alice")
    assert judge_held_jobs() is False
    assert Job.objects.get().held
