"""Jobs that wait for other jobs (`extras.dependencies`, as Slurm's afterok / afterany /
afternotok), run with real process tasks and the real scheduler loop."""

import pytest

from jobs.models import JobState
from jobs.protocol import JobConfigError
from tests.factories import create_job
from tests.scheduler.conftest import ended_in_order, role, v2_job


def job(name: str, command: str = "sleep 0.3", **waits: list[str | int]) -> str:
    extra = ""
    if waits:
        lines = "".join(f"    {kind}: {list(names)}\n" for kind, names in waits.items())
        extra = f"extras:\n  dependencies:\n{lines}"
    return v2_job(name, role("main", command)) + extra


@pytest.mark.slow
def test_it_runs_a_chain_of_afterok_jobs_in_order(submit, run_until):
    first = submit(job("prep"))
    second = submit(job("train", afterok=["prep"]))
    third = submit(job("evaluate", afterok=["train"]))
    run_until(third, JobState.SUCCEEDED, JobState.FAILED, timeout=60)
    first.refresh_from_db(), second.refresh_from_db()
    assert [j.state for j in (first, second, third)] == [JobState.SUCCEEDED] * 3
    assert ended_in_order(first, second, third)


@pytest.mark.slow
def test_it_ends_the_whole_chain_with_a_reason_when_its_first_job_fails(user, submit, run_until):
    submit(job("prep", "exit 3"))
    second = submit(job("train", afterok=["prep"]))
    third = submit(job("evaluate", afterok=["train"]))
    run_until(third, JobState.SUCCEEDED, JobState.FAILED, timeout=60)
    second.refresh_from_db()
    assert second.state == JobState.FAILED and second.launched_at is None
    assert second.exit_diagnostics == (
        f"its dependency can never be met: job {user.username}~prep ended FAILED (afterok needs it to succeed)"
    )
    assert third.exit_diagnostics == (
        f"its dependency can never be met: job {user.username}~train ended FAILED (afterok needs it to succeed)"
    )


def test_it_says_which_job_a_held_job_waits_for(user, submit, scheduler):
    submit(job("prep", "sleep 30"))
    waiting = submit(job("train", afterany=["prep"]))
    scheduler.run_once()
    waiting.refresh_from_db()
    assert waiting.state == JobState.WAITING and waiting.held
    assert waiting.pending_reason.startswith(f"waiting for job {user.username}~prep to end (afterany; it is ")
    assert [part["code"] for part in waiting.pending_reason_messages] == ["reason.dependency.afterany"]


# The job waited for is its row as its run left it (the dependency pass reads only its state): a
# real run of it, before the waiting job's own, doubled these tests' time.


def test_it_runs_an_afternotok_job_once_the_other_failed(user, submit, run_until):
    create_job(user, "prep", state=JobState.FAILED)
    cleanup = run_until(
        submit(job("cleanup", "true", afternotok=["prep"])), JobState.SUCCEEDED, JobState.FAILED, timeout=30
    )
    assert cleanup.state == JobState.SUCCEEDED


def test_it_takes_a_job_by_id(user, submit, run_until):
    first = create_job(user, "prep", state=JobState.SUCCEEDED)
    second = run_until(
        submit(job("train", "true", afterok=[first.pk])), JobState.SUCCEEDED, JobState.FAILED, timeout=30
    )
    assert second.state == JobState.SUCCEEDED


def test_it_refuses_a_dependency_on_a_job_the_user_does_not_have(submit):
    with pytest.raises(JobConfigError) as refused:
        submit(job("train", afterok=["nope"], afterany=[999999]))
    assert refused.value.english == [
        ("extras.dependencies.afterok[0]", 'you have no job or sweep named "nope"'),
        ("extras.dependencies.afterany[0]", "no job with id 999999 that you may see"),
    ]


def test_it_refuses_a_dependency_on_another_users_job(submit, user):
    from tests.factories import create_user

    other = create_user("bob")
    submit(job("secret"), owner=other)
    with pytest.raises(JobConfigError) as refused:
        submit(job("train", afterok=["bob~secret"]))
    assert refused.value.english == [("extras.dependencies.afterok[0]", 'no job "bob~secret" that you may see')]


def test_it_refuses_an_unknown_dependency_kind(submit):
    with pytest.raises(JobConfigError) as refused:
        submit(job("train", after=["x"]))
    assert refused.value.english[0][0].startswith("extras.dependencies")
