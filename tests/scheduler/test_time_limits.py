"""Time limits end a job at its limit, with its exit code and reason (real sandboxed processes)."""

import time

import pytest

from clusters.models import VirtualCluster
from jobs.actions import submit_job
from jobs.models import JobState
from jobs.protocol import JobConfigError
from jobs.protocol.exitspec import ExitCode
from tests.conftest import processes_running
from tests.scheduler.conftest import role, v2_job


@pytest.mark.slow
def test_it_ends_a_job_at_its_time_limit_with_its_reason(submit, run_until):
    # 0.05 minutes = 3 s: the extra keeps fractions of a minute to the second.
    text = v2_job("limited", role("worker", "exec sleep 303.3"), extra="extras:\n  maxRunTimeMinutes: 0.05\n")
    job = submit(text)
    assert job.time_limit_seconds == 3
    job = run_until(job, JobState.RUNNING)
    started = time.monotonic()
    job = run_until(job, JobState.FAILED, timeout=20)
    assert 2.0 <= time.monotonic() - started < 10  # (launched a moment before it was seen RUNNING)
    assert job.exit_code == ExitCode.TIME_LIMIT_EXCEEDED
    assert "time limit of 3 s" in job.exit_diagnostics
    task = job.tasks.get()
    assert (task.state, task.exit_code) == ("STOPPED", ExitCode.TIME_LIMIT_EXCEEDED)
    event = job.events.get(kind="time-limit")
    assert event.message == "The job reached its time limit of 3 s and was ended (exit -1230)."
    assert not processes_running("sleep", "303.3")


@pytest.mark.slow
def test_it_ends_a_job_at_its_time_limit_with_sigterm_and_its_grace_first(submit, run_until):
    from jobs.models import TaskAttempt
    from tests.scheduler.test_preemption import trace, yaml_job

    saves = [  # (the trap first: "start" says it is set)
        "trap 'sleep 1; echo saved >> \"$PAI_DEFAULT_FS_URI/trace-$PAI_JOB_NAME\"; exit 7' TERM",
        'echo start >> "$PAI_DEFAULT_FS_URI/trace-$PAI_JOB_NAME"',
        "sleep 300 & wait",
    ]
    extra = "extras:\n  maxRunTimeMinutes: 0.05\n  gracePeriodSeconds: 5\n"  # 3 s, then up to 5 s to save
    job = run_until(submit(yaml_job("saver", saves, cpu=1, extra=extra)), JobState.RUNNING)
    job = run_until(job, JobState.FAILED, timeout=20)
    assert trace("saver") == ["start", "saved"]  # SIGTERM, and the second its trap took to save
    assert job.exit_code == ExitCode.TIME_LIMIT_EXCEEDED
    assert (job.ending_deadline, job.ending_cause) == (None, "time_limit")  # (why it ended, kept)
    attempt = TaskAttempt.objects.get(job=job)
    assert (attempt.exit_code, attempt.user_exit_code) == (ExitCode.TIME_LIMIT_EXCEEDED, 7)
    assert job.events.get(kind="time-limit-grace").message == (
        "The job reached its time limit of 3 s: its tasks got SIGTERM and 5 s to save their work."
    )
    assert job.events.filter(kind="time-limit").exists()


def test_it_gives_a_job_without_a_limit_its_vcs_default(user, default_vc):
    VirtualCluster.objects.filter(pk=default_vc.pk).update(default_run_minutes=90, max_run_minutes=600)
    job = submit_job(user, v2_job("defaulted", role("worker", "true")))
    assert job.time_limit_seconds == 90 * 60


def test_it_refuses_a_limit_over_the_vcs_maximum_naming_the_field(user, default_vc):
    VirtualCluster.objects.filter(pk=default_vc.pk).update(max_run_minutes=60)
    text = v2_job("too-long", role("worker", "true"), extra="extras:\n  maxRunTimeMinutes: 61\n")
    with pytest.raises(JobConfigError) as refused:
        submit_job(user, text)
    assert refused.value.english == [
        ("extras.maxRunTimeMinutes", "asks for 1 h 1 min; its virtual cluster allows at most 1 h")
    ]


def test_it_refuses_a_limit_that_is_not_a_number_when_loaded(user, default_vc):
    text = v2_job("bad-limit", role("worker", "true"), extra="extras:\n  maxRunTimeMinutes: soon\n")
    with pytest.raises(JobConfigError) as refused:
        submit_job(user, text)
    assert refused.value.english == [("extras.maxRunTimeMinutes", "must be a number of minutes, not 'soon'")]
