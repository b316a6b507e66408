"""Job and task attempts (OpenPAI's `/job-attempts`, `/attempts/<n>`, `…/taskIndex/<i>/attempts`)
and each attempt's own log, after a task retried once."""

import pytest

from jobs.models import Job, JobState
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


def test_it_lists_a_tasks_attempts_with_their_exits(alice, retried):
    attempts = alice.get(f"{TASK}/attempts").json()
    assert [(a["attemptId"], a["containerExitCode"]) for a in attempts] == [(0, 255), (1, 0)]
    assert attempts[0]["containerUserExitCode"] == 3


def test_it_serves_each_attempts_own_log(alice, anonymous, retried):
    assert b"first-try" in log_of(alice, anonymous, 0)
    assert b"second-try" in log_of(alice, anonymous, 1)
    assert b"first-try" not in log_of(alice, anonymous, 1)


def test_it_serves_each_stream_of_an_earlier_attempt(alice, anonymous, retried):
    assert log_of(alice, anonymous, 0, "stderr") == b"first-failure\n"
    assert b"first-failure" not in log_of(alice, anonymous, 0, "stdout")
    assert log_of(alice, anonymous, 1, "stderr") == b""


def test_it_answers_404_for_an_attempt_that_never_ran(alice, retried):
    response = alice.get(f"{TASK}/attempts/7/logs")
    assert response.status_code == 404
    assert response.json()["code"] == "NoTaskLogError"


def test_it_lists_job_attempts_with_the_latest_marked(alice, retried):
    (attempt,) = alice.get(f"{JOB}/job-attempts").json()
    assert (attempt["attemptIndex"], attempt["isLatest"]) == (0, True)
    assert attempt["jobStatus"]["attemptState"] == "SUCCEEDED"


def test_it_answers_the_job_at_an_attempt(alice, retried):
    assert alice.get(f"{JOB}/attempts/0").json()["jobStatus"]["state"] == "SUCCEEDED"
    assert alice.get(f"{JOB}/attempts/3").status_code == 404


def test_it_shows_an_earlier_job_attempt_after_a_restart(alice, retried, run_until):
    assert alice.put(f"{JOB}/executionType", {"value": "START"}, format="json").status_code == 202
    run_until(retried, JobState.SUCCEEDED)
    first, second = alice.get(f"{JOB}/job-attempts").json()
    assert (first["isLatest"], second["isLatest"]) == (False, True)
    (task,) = first["taskRoles"]["worker"]["taskStatuses"]
    assert (task["attemptId"], task["containerExitCode"]) == (1, 0)
