"""A job's ending is one record (Job.ending_*): which end may begin, what a Stop asked does to one
under way, and what is kept once the job ended."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from jobs import lifecycle
from jobs.models import Job, JobState
from tests.factories import create_job

pytestmark = pytest.mark.django_db


@pytest.fixture
def running(user, default_vc):
    return create_job(user, "busy", state=JobState.RUNNING, job_attempt=1, time_limit_seconds=60)


@pytest.fixture
def urgent(user, default_vc):
    return create_job(user, "urgent")


def test_it_begins_no_second_end_on_a_job_already_ending(running, urgent):
    deadline = timezone.now() + timedelta(seconds=30)
    assert lifecycle.begin_ending(running, Job.Ending.PREEMPTION, deadline, 30, by=urgent)
    assert not lifecycle.begin_ending(running, Job.Ending.TIME_LIMIT, deadline + timedelta(seconds=5), 30)
    job = Job.objects.get(pk=running.pk)
    assert (job.ending_cause, job.ending_by_id, job.ending_deadline) == ("preemption", urgent.pk, deadline)


def test_a_stop_asked_during_a_preemption_takes_its_end_over_with_its_deadline(running, urgent):
    deadline = timezone.now() + timedelta(seconds=30)
    lifecycle.begin_ending(running, Job.Ending.PREEMPTION, deadline, 30, by=urgent)
    lifecycle.request_stop(running, "alice")
    job = Job.objects.get(pk=running.pk)
    assert (job.ending_cause, job.ending_by_id, job.ending_deadline) == ("stop", None, deadline)
    assert job.execution_type == Job.ExecutionType.STOP


def test_a_job_keeps_why_it_ended_and_starts_again_with_no_ending(running):
    lifecycle.begin_ending(running, Job.Ending.TIME_LIMIT, timezone.now(), 0)
    lifecycle.end_at_time_limit(running, -1230, "JobMaxRunTimeExceeded", "1 min")
    ended = Job.objects.get(pk=running.pk)
    assert (ended.state, ended.ending_cause, ended.ending_deadline) == (JobState.FAILED, "time_limit", None)
    lifecycle.restart(ended, "alice")
    again = Job.objects.get(pk=running.pk)
    assert (again.ending_cause, again.execution_type) == ("", Job.ExecutionType.START)
