"""Backfill on time limits with real sandboxed processes under the real scheduler loop (Slurm's
backfill): a VC's blocked first job gets a reservation from the running job's time limit, stored;
a short job starts ahead of it and the first job still starts at its reserved time; a job that would
run past that start does not. Its expected start rests on recent jobs' run times, its reservation
on the limits."""

import time
from datetime import timedelta

import pytest
from django.conf import settings
from django.utils import timezone

from clusters.placement import Backfilled, PlacementResult
from jobs.actions import stop_job
from jobs.models import JobEvent, JobState
from scheduling.models import VcQueue
from scheduling.scheduler import Scheduler
from scheduling.sharing import backfill_notes
from tests.factories import create_job
from tests.scheduler.test_borrowing import end
from tests.scheduler.test_preemption import yaml_job

pytestmark = pytest.mark.slow


def limited(minutes: float) -> str:
    return f"extras:\n  maxRunTimeMinutes: {minutes}\n"


def blocked_head(submit, run_until, scheduler):
    """A running job of 6 of the node's 8 CPUs, ended by its limit 6 s after its launch; the VC's
    first waiting job asks 4 CPUs."""
    running = run_until(submit(yaml_job("running", ["sleep 300"], cpu=6, extra=limited(0.1))), JobState.RUNNING)
    head = submit(yaml_job("head", ["sleep 30"], cpu=4))
    scheduler.run_once()
    return running, head


def test_it_starts_a_short_job_ahead_and_the_first_job_still_at_its_reserved_time(submit, run_until, scheduler):
    running, head = blocked_head(submit, run_until, scheduler)
    short = run_until(submit(yaml_job("short", ["sleep 1"], cpu=2, extra=limited(0.05))), JobState.RUNNING)
    stored = VcQueue.objects.get(vc=head.virtual_cluster).reservation
    assert stored is not None
    frees_at = running.launched_at.timestamp() + 6 + settings.PAI_GRACE_SECONDS  # (its limit, then its grace)
    assert stored["job"] == head.pk and stored["start"] == pytest.approx(frees_at, abs=1)
    said = JobEvent.objects.get(job=short, kind="backfilled").message
    assert said.startswith(f"started ahead of job {head.pk} (backfill: it ends by ") and "reserved start at" in said
    run_until(head, JobState.RUNNING, timeout=30)
    late = head.launched_at.timestamp() - stored["start"]
    print(f"the first job started {late:+.2f} s after its reserved start")
    assert late < 3  # its reserved start, then the running job's SIGTERM and a pass
    end(run_until, head, short, running)


def test_it_keeps_a_job_that_would_run_past_the_reserved_start_waiting(submit, run_until, scheduler):
    running, head = blocked_head(submit, run_until, scheduler)
    long = submit(yaml_job("long", ["sleep 1"], cpu=2, extra=limited(1)))
    for _ in range(3):
        scheduler.run_once()
        time.sleep(0.05)
    long.refresh_from_db()
    assert long.state == JobState.WAITING and f"waiting behind job {head.full_name}" in long.pending_reason
    end(run_until, long, head, running)


def test_a_restarted_scheduler_keeps_the_reservation_and_backfills_within_it(submit, run_until, scheduler):
    running = run_until(submit(yaml_job("running", ["sleep 300"], cpu=6, extra=limited(0.2))), JobState.RUNNING)
    head = submit(yaml_job("head", ["sleep 30"], cpu=4))
    scheduler.run_once()
    given = VcQueue.objects.get(vc=head.virtual_cluster).reservation
    assert given is not None and given["job"] == head.pk
    scheduler.release_lease()  # the scheduler dies between passes; another one takes over
    restarted = Scheduler(holder="restarted")
    long = submit(yaml_job("long", ["sleep 1"], cpu=2, extra=limited(1)))
    short = submit(yaml_job("short", ["sleep 1"], cpu=2, extra=limited(0.05)))
    passes_until(restarted, lambda: short.refresh_from_db() or short.state != JobState.WAITING)
    assert VcQueue.objects.get(vc=head.virtual_cluster).reservation == given  # (the same start, the same nodes)
    assert JobEvent.objects.filter(job=short, kind="backfilled").exists()
    long.refresh_from_db()
    assert long.state == JobState.WAITING and f"waiting behind job {head.full_name}" in long.pending_reason
    passes_until(restarted, lambda: head.refresh_from_db() or head.state == JobState.RUNNING)
    late = head.launched_at.timestamp() - given["start"]
    print(f"after the restart, the first job started {late:+.2f} s after its reserved start")
    assert late < 3
    jobs = (long, head, short, running)
    for job in jobs:
        if not ended(job):
            stop_job(job, job.owner)
    passes_until(restarted, lambda: all(ended(job) for job in jobs))


def ended(job) -> bool:
    job.refresh_from_db()
    return job.is_finished


def passes_until(scheduler, condition, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        scheduler.run_once()
        time.sleep(0.05)


def test_it_says_a_job_without_a_limit_took_none_of_the_reserved_room():
    result = PlacementResult(backfilled={2: Backfilled(ahead_of=1, ends_by=None, start=time.time() + 60)})
    assert backfill_notes(result)[2].code == "event.backfilled.elsewhere"


def test_it_says_a_job_that_ends_in_time_ends_before_the_reserved_start():
    now = time.time()
    result = PlacementResult(backfilled={2: Backfilled(ahead_of=1, ends_by=now + 30, start=now + 60)})
    assert backfill_notes(result)[2].code == "event.backfilled.before"


def ran_lately(owner, share: float, count: int = 3, limit_s: int = 600) -> None:
    """`count` jobs of `owner` that ended a minute ago, each having run `share` of its time limit."""
    ended = timezone.now() - timedelta(minutes=1)
    launched = ended - timedelta(seconds=share * limit_s)
    for number in range(count):
        create_job(
            owner,
            f"ran-{number}",
            state=JobState.SUCCEEDED,
            time_limit_seconds=limit_s,
            launched_at=launched,
            completed_at=ended,
        )


def a_minute_job_and_a_blocked_head(submit, run_until, scheduler):
    """A running job of 6 of the node's 8 CPUs limited to 1 minute; the VC's first waiting job asks 4."""
    running = run_until(submit(yaml_job("running", ["sleep 300"], cpu=6, extra=limited(1))), JobState.RUNNING)
    head = submit(yaml_job("head", ["sleep 30"], cpu=4))
    scheduler.run_once()
    head.refresh_from_db()
    return running, head


def test_it_expects_the_first_job_when_the_running_job_ends_as_its_owners_recent_jobs_did(
    submit, run_until, scheduler, user
):
    ran_lately(user, share=0.5)  # (alice's jobs ran half their limits lately)
    running, head = a_minute_job_and_a_blocked_head(submit, run_until, scheduler)
    launched = running.launched_at.timestamp()
    assert head.expected_start_at is not None
    assert head.expected_start_at.timestamp() == pytest.approx(launched + 30, abs=1)  # (half of its minute)
    stored = VcQueue.objects.get(vc=head.virtual_cluster).reservation
    assert stored is not None  # (the reservation keeps to the limit and its grace: backfill's guarantee)
    assert stored["start"] == pytest.approx(launched + 60 + settings.PAI_GRACE_SECONDS, abs=1)
    end(run_until, head, running)


def test_it_expects_the_first_job_at_the_running_jobs_limit_while_no_job_has_ended(submit, run_until, scheduler):
    running, head = a_minute_job_and_a_blocked_head(submit, run_until, scheduler)
    assert head.expected_start_at is not None
    frees_at = running.launched_at.timestamp() + 60 + settings.PAI_GRACE_SECONDS
    assert head.expected_start_at.timestamp() == pytest.approx(frees_at, abs=1)
    end(run_until, head, running)
