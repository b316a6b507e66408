"""The job detail in OpenPAI's shape, for a job run to SUCCEEDED on the process executor, and its logs."""

import pytest

from jobs.models import Job, JobState
from tests.conftest import shared_in_module
from tests.factories import v2_yaml

# The scheduler loop closes old connections each pass: it needs real transactions.
pytestmark = pytest.mark.django_db(transaction=True)


TASK_LOGS = "/api/v2/jobs/alice~done/attempts/0/taskRoles/worker/taskIndex/0/attempts/0/logs"


@pytest.fixture
def ran(default_vc, submit_yaml, alice, anonymous, process_node, run_until):
    """The detail of a job run to SUCCEEDED, and what its log links answer (followed as a client
    follows them: the container log's first location, the tail-mode route's, a task that is not)."""
    submit_yaml(v2_yaml("done", "echo hello-from-the-task", ports="{http: 2}"))
    job = run_until(Job.objects.get(name="done"), JobState.SUCCEEDED, JobState.FAILED)
    assert job.state == JobState.SUCCEEDED, job.exit_diagnostics
    detail = alice.get("/api/v2/jobs/alice~done").json()
    (task,) = detail["taskRoles"]["worker"]["taskStatuses"]
    (first, *_) = alice.get(task["containerLog"]).json()["locations"]
    first_log = anonymous.get(first["uri"])
    tail_mode = alice.get(f"{TASK_LOGS}?tail-mode=true")
    locations = {location["name"]: location["uri"] for location in tail_mode.json()["locations"]}
    ghost = alice.get(TASK_LOGS.replace("/worker/", "/ghost/"))
    return {
        "detail": detail,
        "first log": (first_log.status_code, b"".join(first_log.streaming_content)),
        "tail mode": (tail_mode.status_code, list(locations), anonymous.get(locations["all"]).content),
        "ghost": (ghost.status_code, ghost.json()),
    }


# The tests share one real run's answers (each ran its own job before: four runs of one job).
answers = shared_in_module("ran")


@pytest.fixture
def detail(answers):
    return answers["detail"]


JOB_STATUS_TYPES = {
    "username": str,
    "state": str,
    "subState": str,
    "executionType": str,
    "retries": int,
    "retryDetails": dict,
    "createdTime": int,
    "launchedTime": int,
    "completedTime": int,
    "appExitCode": int,
    "appExitSpec": dict,
    "virtualCluster": str,
}
TASK_STATUS_TYPES = {
    "taskIndex": int,
    "taskState": str,
    "containerId": str,
    "containerIp": str,
    "containerPorts": dict,
    "containerGpus": int,
    "containerLog": str,
    "containerExitCode": int,
    "retries": int,
}


def test_it_gives_job_status_openpais_keys_and_types(detail):
    status = detail["jobStatus"]
    for key, kind in JOB_STATUS_TYPES.items():
        assert isinstance(status[key], kind), (key, status[key])
    assert status["state"] == "SUCCEEDED"
    assert status["appExitCode"] == 0
    assert status["appExitSpec"]["code"] == 0


def test_it_gives_task_statuses_openpais_keys_and_types(detail):
    assert detail["name"] == "done"
    (task,) = detail["taskRoles"]["worker"]["taskStatuses"]
    for key, kind in TASK_STATUS_TYPES.items():
        assert isinstance(task[key], kind), (key, task[key])
    assert detail["taskRoles"]["worker"]["taskRoleStatus"] == {"name": "worker"}


def test_it_gives_container_ports_as_comma_strings(detail):
    (task,) = detail["taskRoles"]["worker"]["taskStatuses"]
    ports = task["containerPorts"]["http"].split(",")
    assert len(ports) == 2 and all(port.isdigit() for port in ports)


def test_its_container_log_is_openpais_relative_logs_route(detail, answers):
    (task,) = detail["taskRoles"]["worker"]["taskStatuses"]
    assert task["containerLog"] == TASK_LOGS
    status, content = answers["first log"]
    assert status == 200
    assert b"hello-from-the-task" in content


def test_it_lists_log_locations_on_the_task_log_route(answers):
    status, names, everything = answers["tail mode"]
    assert status == 200
    assert names == ["stdout", "stderr", "all"]
    assert b"hello-from-the-task" in everything


def test_it_answers_404_for_a_task_that_does_not_exist(answers):
    status, body = answers["ghost"]
    assert status == 404
    assert body["code"] == "NoTaskLogError"


def test_it_refuses_a_tampered_log_link(anonymous):
    response = anonymous.get("/api/v2/task-logs/forged:token")
    assert response.status_code == 404
    assert response.json()["code"] == "NoTaskLogError"


def test_it_gives_openpais_attempt_fields(detail):
    assert detail["jobStatus"]["attemptState"] == "SUCCEEDED"
    assert isinstance(detail["jobStatus"]["appCreatedTime"], int)
    assert (detail["tags"], detail["jobPriority"]) == ([], "test")
    (task,) = detail["taskRoles"]["worker"]["taskStatuses"]
    assert task["attemptState"] == "SUCCEEDED"
    assert task["currentAttemptCompletedTime"] >= task["currentAttemptCreatedTime"]


def test_it_gives_the_node_address_where_the_ports_are_published_as_container_ip(detail):
    (task,) = detail["taskRoles"]["worker"]["taskStatuses"]
    assert task["containerIp"] == "127.0.0.2"  # the node's address, never the portal's
