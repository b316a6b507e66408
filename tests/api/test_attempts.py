"""Job and task attempts (OpenPAI's `/job-attempts`, `/attempts/<n>`, `…/taskIndex/<i>/attempts`)
and each attempt's own log, after a task retried once."""

from typing import Any

import pytest

from jobs.models import Job, JobState
from tests.conftest import shared_in_module
from tests.factories import v2_yaml

pytestmark = pytest.mark.django_db

RETRIED = v2_yaml(
    "flaky",
    '"if [ -f $PAI_WORK_DIR/tried ]; then echo second-try; exit 0; fi"',
    '"touch $PAI_WORK_DIR/tried; echo first-try; echo first-failure >&2; exit 3"',
    role_extra="    taskRetryCount: 1\n",
)
JOB = "/rest-server/api/v2/jobs/alice~flaky"
TASK = f"{JOB}/attempts/0/taskRoles/worker/taskIndex/0"


@pytest.fixture
def retried(default_vc, submit_yaml, process_node, run_until):
    assert submit_yaml(RETRIED).status_code == 202
    job = run_until(Job.objects.get(name="flaky"), JobState.SUCCEEDED, JobState.FAILED)
    assert job.state == JobState.SUCCEEDED, job.exit_diagnostics
    return job


def log_of(client, anonymous, task_attempt: int, stream: str = "all") -> bytes:
    locations = client.get(f"{TASK}/attempts/{task_attempt}/logs").json()["locations"]
    (uri,) = [location["uri"] for location in locations if location["name"] == stream]
    return b"".join(anonymous.get(uri).streaming_content)


@pytest.fixture
def answers_after_retry(alice, anonymous, retried) -> dict[str, Any]:
    """What the attempts routes answer after the real retried run."""
    missing = alice.get(f"{TASK}/attempts/7/logs")
    return {
        "task attempts": alice.get(f"{TASK}/attempts").json(),
        "logs": {
            (attempt, stream): log_of(alice, anonymous, attempt, stream)
            for attempt in (0, 1)
            for stream in ("all", "stdout", "stderr")
        },
        "log of an attempt that never ran": (missing.status_code, missing.json()),
        "job attempts": alice.get(f"{JOB}/job-attempts").json(),
        "job at attempt 0": alice.get(f"{JOB}/attempts/0").json(),
        "job at attempt 3": alice.get(f"{JOB}/attempts/3").status_code,
    }


# The tests that only read the routes' answers share one real run's; the restart runs its own.
answers = shared_in_module("answers_after_retry")


def test_it_lists_a_tasks_attempts_with_their_exits(answers):
    attempts = answers["task attempts"]
    assert [(a["attemptId"], a["containerExitCode"]) for a in attempts] == [(0, 255), (1, 0)]
    assert attempts[0]["containerUserExitCode"] == 3


def test_it_serves_each_attempts_own_log(answers):
    logs = answers["logs"]
    assert b"first-try" in logs[0, "all"]
    assert b"second-try" in logs[1, "all"]
    assert b"first-try" not in logs[1, "all"]


def test_it_serves_each_stream_of_an_earlier_attempt(answers):
    logs = answers["logs"]
    assert logs[0, "stderr"] == b"first-failure\n"
    assert b"first-failure" not in logs[0, "stdout"]
    assert logs[1, "stderr"] == b""


def test_it_answers_404_for_an_attempt_that_never_ran(answers):
    status, body = answers["log of an attempt that never ran"]
    assert status == 404
    assert body["code"] == "NoTaskLogError"


def test_it_lists_job_attempts_with_the_latest_marked(answers):
    (attempt,) = answers["job attempts"]
    assert (attempt["attemptIndex"], attempt["isLatest"]) == (0, True)
    assert attempt["jobStatus"]["attemptState"] == "SUCCEEDED"


def test_it_answers_the_job_at_an_attempt(answers):
    assert answers["job at attempt 0"]["jobStatus"]["state"] == "SUCCEEDED"
    assert answers["job at attempt 3"] == 404


def test_it_shows_an_earlier_job_attempt_after_a_restart(alice, retried, run_until):
    assert alice.put(f"{JOB}/executionType", {"value": "START"}, format="json").status_code == 202
    run_until(retried, JobState.SUCCEEDED)
    first, second = alice.get(f"{JOB}/job-attempts").json()
    assert (first["isLatest"], second["isLatest"]) == (False, True)
    (task,) = first["taskRoles"]["worker"]["taskStatuses"]
    assert (task["attemptId"], task["containerExitCode"]) == (1, 0)
