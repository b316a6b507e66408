"""Preemption inside a VC with real sandboxed processes under the real scheduler loop: a `prod`
job preempts a `test` job, which gets SIGTERM (its trap saves its work), a grace period, then its
exit, and waits again free of charge; a gang goes whole; a job that would still not fit preempts
nothing; a task that ignores SIGTERM is killed when its grace is over."""

import time
from pathlib import Path

import pytest
from django.conf import settings
from django.utils import timezone

from jobs.actions import stop_job
from jobs.models import Job, JobEvent, JobState, TaskAttempt
from jobs.protocol.exitspec import ExitCode
from scheduling.scheduler import Scheduler
from tests.scheduler.conftest import passes_until, v2_job

pytestmark = pytest.mark.slow

# The node of the process_node fixture has 8 CPUs: the default VC's whole quota.
SAVES_ON_SIGTERM = [  # (the trap first: "start" says it is set)
    "trap 'echo saved >> \"$PAI_DEFAULT_FS_URI/trace-$PAI_JOB_NAME\"; exit 7' TERM",
    'echo "start resumed=$PAI_JOB_RESUMED" >> "$PAI_DEFAULT_FS_URI/trace-$PAI_JOB_NAME"',
    "sleep 120 & wait",
]


def quoted(command: str) -> str:
    return "'" + command.replace("'", "''") + "'"


def yaml_job(name: str, commands: list[str], *, cpu: int, instances: int = 1, extra: str = "") -> str:
    lines = "".join(f"      - {quoted(command)}\n" for command in commands)
    role = f"""  worker:
    instances: {instances}
    dockerImage: image
    resourcePerInstance: {{cpu: {cpu}, memoryMB: 256, gpu: 0}}
    commands:
{lines}"""
    return v2_job(name, role, extra)


def trace(name: str) -> list[str]:
    path = Path(settings.PAI_FS_ROOT) / "alice" / f"trace-{name}"
    return path.read_text().split("\n")[:-1] if path.exists() else []


PROD = "jobPriorityClass: prod\n"


def test_it_preempts_a_test_job_for_a_prod_job_which_saves_its_work_and_waits_again_free(
    default_vc, submit, run_until, scheduler
):
    victim = run_until(submit(yaml_job("train", SAVES_ON_SIGTERM, cpu=6)), JobState.RUNNING)
    passes_until(scheduler, lambda: trace("train") == ["start resumed=false"])
    urgent = submit(yaml_job("urgent", ["sleep 1"], cpu=4, extra=PROD))
    run_until(urgent, JobState.RUNNING)
    victim.refresh_from_db()
    assert victim.state == JobState.WAITING
    assert trace("train")[:2] == ["start resumed=false", "saved"]  # its trap ran: SIGTERM, then time to save
    assert (victim.retries_used, victim.transient_retries, victim.preemptions) == (0, 0, 1)
    assert "Preempted by job alice~urgent of VC default" in victim.pending_reason
    attempt = TaskAttempt.objects.get(job=victim)
    assert (attempt.exit_code, attempt.user_exit_code) == (ExitCode.PREEMPTED_FOR_CRITICAL_POD, 7)
    assert "preempted by job alice~urgent of VC default" in attempt.exit_diagnostics
    event = JobEvent.objects.get(job=victim, kind="preempted")
    assert "Preempted by job alice~urgent of VC default" in event.message
    # Once the prod job is done, the preempted one runs again, told that it resumes.
    run_until(urgent, JobState.SUCCEEDED)
    run_until(victim, JobState.RUNNING)
    passes_until(scheduler, lambda: trace("train")[2:] == ["start resumed=true"])
    stop_job(victim, victim.owner)
    run_until(victim, JobState.STOPPED)


def test_it_preempts_a_gang_whole(default_vc, submit, run_until, scheduler):
    gang = run_until(submit(yaml_job("gang", SAVES_ON_SIGTERM, cpu=3, instances=2)), JobState.RUNNING)
    passes_until(scheduler, lambda: trace("gang").count("start resumed=false") == 2)
    urgent = submit(yaml_job("urgent", ["sleep 30"], cpu=4, extra=PROD))
    run_until(urgent, JobState.RUNNING)
    gang.refresh_from_db()
    assert gang.state == JobState.WAITING
    # Both tasks had SIGTERM and ran their trap (exit 7), though one alone would have made room.
    assert sorted(TaskAttempt.objects.filter(job=gang).values_list("index", "exit_code", "user_exit_code")) == [
        (0, ExitCode.PREEMPTED_FOR_CRITICAL_POD, 7),
        (1, ExitCode.PREEMPTED_FOR_CRITICAL_POD, 7),
    ]
    stop_job(urgent, urgent.owner)
    run_until(urgent, JobState.STOPPED)


def test_it_preempts_nothing_for_a_job_that_would_still_not_fit(default_vc, submit, run_until, scheduler):
    important = run_until(submit(yaml_job("important", ["sleep 120"], cpu=4, extra=PROD)), JobState.RUNNING)
    small = run_until(submit(yaml_job("small", SAVES_ON_SIGTERM, cpu=2)), JobState.RUNNING)
    big = submit(yaml_job("big", ["sleep 1"], cpu=6, extra=PROD))  # 4 + 6 > 8 even without the test job
    for _ in range(10):
        scheduler.run_once()
        time.sleep(0.05)
    small.refresh_from_db()
    big.refresh_from_db()
    assert (small.state, small.ending_deadline, small.preemptions) == (JobState.RUNNING, None, 0)
    assert not JobEvent.objects.filter(job=small, kind="preempted").exists()
    assert big.state == JobState.WAITING and "preempting" not in big.pending_reason
    for job in (important, small):
        stop_job(job, job.owner)
        run_until(job, JobState.STOPPED)


def preempting_a_stubborn_job(submit, run_until, scheduler, grace_s: int) -> tuple[Job, Job]:
    """A running job that ignores SIGTERM (its grace `grace_s`) and a prod job whose preemption of it
    has begun: (the victim, the prod job)."""
    victim = submit(yaml_job("stubborn", STUBBORN, cpu=6, extra=f"extras:\n  gracePeriodSeconds: {grace_s}\n"))
    run_until(victim, JobState.RUNNING)
    passes_until(scheduler, lambda: trace("stubborn") == ["started"])
    urgent = submit(yaml_job("urgent", ["sleep 30"], cpu=4, extra=PROD))
    passes_until(scheduler, lambda: Job.objects.filter(pk=victim.pk, ending_deadline__isnull=False).exists())
    return victim, urgent


def test_it_kills_a_task_that_ignores_sigterm_when_its_grace_is_over(default_vc, submit, run_until, scheduler):
    victim, urgent = preempting_a_stubborn_job(submit, run_until, scheduler, grace_s=2)
    began = time.monotonic()
    run_until(victim, JobState.WAITING, timeout=15)
    took = time.monotonic() - began
    assert "ignored" in trace("stubborn")
    assert 1.5 <= took < 8, took  # the grace (2 s), then the kill
    attempt = TaskAttempt.objects.get(job=victim)
    assert attempt.exit_code == ExitCode.PREEMPTED_FOR_CRITICAL_POD
    run_until(urgent, JobState.RUNNING)
    stop_job(urgent, urgent.owner)
    run_until(urgent, JobState.STOPPED)


def test_it_expects_a_preempting_job_when_its_victims_grace_is_over(default_vc, submit, run_until, scheduler):
    victim, urgent = preempting_a_stubborn_job(submit, run_until, scheduler, grace_s=5)
    victim.refresh_from_db()
    urgent.refresh_from_db()
    assert urgent.state == JobState.WAITING and victim.ending_deadline is not None
    assert urgent.expected_start_at is not None  # (not the plan's, which would wait for the victim's end: unknown)
    assert abs((urgent.expected_start_at - victim.ending_deadline).total_seconds()) <= 0.5
    run_until(urgent, JobState.RUNNING, timeout=15)
    stop_job(urgent, urgent.owner)
    run_until(urgent, JobState.STOPPED)


STUBBORN = [  # (the trap first: "started" says it is set)
    "trap 'echo ignored >> \"$PAI_DEFAULT_FS_URI/trace-$PAI_JOB_NAME\"' TERM",
    'echo started >> "$PAI_DEFAULT_FS_URI/trace-$PAI_JOB_NAME"',
    "while true; do sleep 0.1; done",
]


def test_it_gives_a_stopped_jobs_tasks_sigterm_and_time_to_save(default_vc, submit, run_until, scheduler):
    job = run_until(submit(yaml_job("stopme", SAVES_ON_SIGTERM, cpu=1)), JobState.RUNNING)
    passes_until(scheduler, lambda: trace("stopme") == ["start resumed=false"])
    stop_job(job, job.owner)
    job = run_until(job, JobState.STOPPED)
    assert trace("stopme") == ["start resumed=false", "saved"]
    attempt = TaskAttempt.objects.get(job=job)
    assert (attempt.exit_code, attempt.user_exit_code) == (ExitCode.STOP_REQUESTED, 7)


def test_it_keeps_a_stop_and_its_deadline_across_a_restart_in_the_grace_period(
    default_vc, submit, run_until, scheduler
):
    job = submit(yaml_job("stubborn", STUBBORN, cpu=1, extra="extras:\n  gracePeriodSeconds: 3\n"))
    run_until(job, JobState.RUNNING)
    passes_until(scheduler, lambda: trace("stubborn") == ["started"])
    stop_job(job, job.owner)
    passes_until(scheduler, lambda: "ignored" in trace("stubborn"))
    job.refresh_from_db()
    deadline = job.ending_deadline
    assert job.state == JobState.STOPPING and deadline is not None
    scheduler.release_lease()  # the scheduler dies in the grace period; another one takes over
    restarted = Scheduler(holder="restarted")
    passes_until(restarted, lambda: Job.objects.get(pk=job.pk).state == JobState.STOPPED, timeout=15)
    assert timezone.now() >= deadline  # killed at the stored deadline, not before, not moved
    assert trace("stubborn") == ["started", "ignored"]  # the repeated SIGTERM moved nothing, ran no trap twice
    assert TaskAttempt.objects.filter(job=job).count() == 1


def test_it_requeues_a_preempted_job_once_across_a_restart_in_the_grace_period(
    default_vc, submit, run_until, scheduler
):
    victim = submit(yaml_job("stubborn", STUBBORN, cpu=6, extra="extras:\n  gracePeriodSeconds: 3\n"))
    run_until(victim, JobState.RUNNING)
    passes_until(scheduler, lambda: trace("stubborn") == ["started"])
    urgent = submit(yaml_job("urgent", ["sleep 30"], cpu=4, extra=PROD))
    passes_until(scheduler, lambda: "ignored" in trace("stubborn"))
    scheduler.release_lease()
    restarted = Scheduler(holder="restarted")
    passes_until(restarted, lambda: Job.objects.get(pk=urgent.pk).state == JobState.RUNNING, timeout=15)
    victim.refresh_from_db()
    urgent.refresh_from_db()
    assert (victim.state, victim.preemptions, victim.job_attempt) == (JobState.WAITING, 1, 1)
    assert TaskAttempt.objects.filter(job=victim).count() == 1
    assert urgent.job_attempt == 1 and urgent.tasks.get().attempt == 1  # started once
    stop_job(urgent, urgent.owner)
    passes_until(restarted, lambda: Job.objects.get(pk=urgent.pk).state == JobState.STOPPED)


def test_it_waits_for_a_stopping_job_instead_of_preempting_another(default_vc, submit, run_until, scheduler):
    stopping = submit(yaml_job("stubborn", STUBBORN, cpu=4, extra="extras:\n  gracePeriodSeconds: 3\n"))
    other = submit(yaml_job("other", SAVES_ON_SIGTERM, cpu=3))
    run_until(stopping, JobState.RUNNING)
    run_until(other, JobState.RUNNING)
    passes_until(scheduler, lambda: trace("stubborn") == ["started"])
    stop_job(stopping, stopping.owner)
    passes_until(scheduler, lambda: "ignored" in trace("stubborn"))
    urgent = submit(yaml_job("urgent", ["sleep 30"], cpu=4, extra=PROD))  # fits once the stopping job is gone
    run_until(urgent, JobState.RUNNING, timeout=15)
    other.refresh_from_db()
    assert (other.state, other.ending_deadline, other.preemptions) == (JobState.RUNNING, None, 0)
    for job in (urgent, other):
        stop_job(job, job.owner)
        run_until(job, JobState.STOPPED)
