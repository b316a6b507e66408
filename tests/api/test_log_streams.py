"""A task's stdout and stderr kept apart, as OpenPAI's logs route answers them
(`{locations: [{name: stdout}, {name: stderr}, {name: all}]}`, models/v2/job/log.js), for a real
process task that writes to both, secrets masked in each."""

import pytest
from rest_framework.test import APIClient

from jobs.models import Job, JobState
from tests.conftest import shared_in_module
from tests.factories import create_job, v2_yaml

pytestmark = pytest.mark.django_db

SECRET = "hunter2-stderr-secret"


def chatty_job(*pause: str) -> str:
    return v2_yaml(
        "chatty",
        "echo out-line",
        *pause,
        '"echo err-line >&2"',
        '"echo leaked <% $secrets.token %> >&2"',
        *pause,
        "echo last-out-line",
        extra=f"secrets:\n  token: {SECRET}\n",
    )


# Pauses between the writes: two pipes read side by side keep the order of writes apart in time
# (two written at the same instant may come either way, as in OpenPAI's `all`). Only the test of
# `all`'s order needs them, but one run with them serves every test (a second run, without them,
# for the others took longer than the pauses).
BOTH_STREAMS_APART = chatty_job("sleep 0.3")
LOGS = "/v2/jobs/alice~chatty/attempts/0/taskRoles/worker/taskIndex/0/attempts/0/logs"


def run_chatty(text: str, submit_yaml, run_until) -> Job:
    assert submit_yaml(text).status_code == 202
    job = run_until(Job.objects.get(name="chatty"), JobState.SUCCEEDED, JobState.FAILED)
    assert job.state == JobState.SUCCEEDED, job.exit_diagnostics
    return job


@pytest.fixture
def chatty(default_vc, submit_yaml, process_node, run_until):
    return run_chatty(BOTH_STREAMS_APART, submit_yaml, run_until)


def streams(client, prefix: str = "/api", tail: bool = False) -> dict[str, str]:
    """Each location's text, fetched as OpenPAI's webportal does: a plain GET of its uri."""
    response = client.get(f"{prefix}{LOGS}", {"tail-mode": "true"} if tail else {})
    assert response.status_code == 200
    return {
        location["name"]: APIClient().get(location["uri"]).getvalue().decode()
        for location in response.json()["locations"]
    }


@pytest.fixture
def chatty_answers(alice, bob, chatty) -> dict[str, object]:
    """What the logs route and its links answer after the real run, under both prefixes (and
    what they answer another user)."""
    return {
        "names": {
            prefix: [location["name"] for location in alice.get(f"{prefix}{LOGS}").json()["locations"]]
            for prefix in ("/api", "/rest-server/api")
        },
        "streams": streams(alice),
        "tails": streams(alice, tail=True),
        "to_another_user": bob.get(f"/api{LOGS}").status_code,
    }


# The tests that only read the route's answers share one real run's.
answers = shared_in_module("chatty_answers")


@pytest.mark.parametrize("prefix", ["/api", "/rest-server/api"])
def test_it_lists_stdout_stderr_and_all_in_openpais_order(answers, prefix):
    assert answers["names"][prefix] == ["stdout", "stderr", "all"]


def test_it_serves_stdout_alone(answers):
    assert answers["streams"]["stdout"].split() == ["out-line", "last-out-line"]


def test_it_serves_stderr_alone_with_the_secret_masked(answers):
    assert answers["streams"]["stderr"].splitlines() == ["err-line", "leaked ******"]


def test_it_serves_both_streams_in_order_in_all(answers):
    assert answers["streams"]["all"].splitlines() == ["out-line", "err-line", "leaked ******", "last-out-line"]


def test_it_masks_the_secret_in_every_stream_in_tail_mode(answers):
    tails = answers["tails"]
    assert "leaked ******" in tails["stderr"] and "leaked ******" in tails["all"]
    assert not any(SECRET in text for text in tails.values())


def test_it_keeps_the_streams_from_other_users(answers):
    assert answers["to_another_user"] == 404


def locations_of(client, job: str) -> list[str]:
    route = f"/api/v2/jobs/{job}/attempts/0/taskRoles/worker/taskIndex/0/attempts/0/logs"
    return [location["name"] for location in client.get(route).json()["locations"]]


def test_it_offers_the_three_streams_of_a_task_that_has_not_started(alice, user, default_vc):
    create_job(user, "queued")
    assert locations_of(alice, "alice~queued") == ["stdout", "stderr", "all"]


def test_it_offers_only_all_for_a_log_written_before_the_streams_were_kept_apart(alice, user, default_vc, tmp_path):
    log = tmp_path / "worker-0-1.log"
    log.write_text("merged\n")
    create_job(user, "older", state=JobState.RUNNING).tasks.update(log_path=str(log))
    assert locations_of(alice, "alice~older") == ["all"]
