"""Before each start the image's registry is judged again, and a forbidden one refused in one
sentence (issue 44, item 5): a name's addresses may change after submit, and an admin may withdraw
a registry. Whether anything listened there never shows in the job's error (no port oracle)."""

from __future__ import annotations

import dataclasses
import socket
from collections.abc import Iterator

import pytest

from clusters.executors.base import ExecutorError, Failure
from jobs import registries
from jobs.actions import submit_job
from jobs.models import JobState
from jobs.registries import RegistryJudge
from scheduling.starting import _start_one
from tests.factories import v2_yaml


@pytest.fixture
def listening_port() -> Iterator[int]:
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen()
        yield server.getsockname()[1]


@pytest.fixture
def closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def test_a_start_from_a_registry_withdrawn_since_submit_fails_the_same_whether_its_port_listens(
    user, process_node, run_until, settings, listening_port, closed_port
):
    settings.PAI_ALLOWED_PRIVATE_REGISTRIES = ["127.0.0.1"]
    opened = submit_job(user, v2_yaml("open", image=f"127.0.0.1:{listening_port}/x:1"))
    closed = submit_job(user, v2_yaml("closed", image=f"127.0.0.1:{closed_port}/x:1"))
    settings.PAI_ALLOWED_PRIVATE_REGISTRIES = []
    opened, closed = (run_until(job, JobState.FAILED, JobState.SUCCEEDED) for job in (opened, closed))
    assert (opened.state, opened.exit_code) == (closed.state, closed.exit_code) == (JobState.FAILED, 254)
    said = [
        job.exit_diagnostics.replace(str(port), "PORT")
        for job, port in ((opened, listening_port), (closed, closed_port))
    ]
    assert said[0] == said[1]
    assert "pulling image 127.0.0.1:PORT/x:1 refused: registry 127.0.0.1:PORT is a loopback address" in said[0]


class PullFailed:
    """An engine whose pull of the image failed, saying what the registry answered."""

    def start(self, launch):
        raise ExecutorError(
            f"pulling image {launch.image} failed: the registry answered HTTP 404", Failure.IMAGE_NOT_FOUND
        )


def test_a_failed_pull_from_a_name_that_now_resolves_inside_says_only_the_refusal(
    db, make_launch, monkeypatch, settings
):
    """The name resolved outside when judged before the pull, and to the loopback after it failed
    (DNS rebinding): the engine's words never reach the job."""
    answers = iter([["93.184.216.34"], ["127.0.0.1"]])
    monkeypatch.setattr(registries, "resolve", lambda host: next(answers))
    launch = dataclasses.replace(make_launch("true"), image="rebind.example.com/x:1")
    judge = RegistryJudge()
    outcome = _start_one((None, PullFailed(), launch), judge)  # type: ignore[arg-type]
    assert isinstance(outcome, ExecutorError) and outcome.failure is Failure.IMAGE_NOT_FOUND
    assert str(outcome).startswith(
        "pulling image rebind.example.com/x:1 refused: registry rebind.example.com is a name"
    )
    assert "HTTP" not in str(outcome)


def test_a_failed_pull_from_a_name_that_does_not_resolve_here_says_only_the_refusal(db, make_launch, monkeypatch):
    """Left to the engine before the pull (a resolver's hiccup ends no job); once its pull failed,
    the refusal sentence, never what the engine said."""
    monkeypatch.setattr(registries, "resolve", lambda host: [])
    launch = dataclasses.replace(make_launch("true"), image="nowhere.example.com/x:1")
    outcome = _start_one((None, PullFailed(), launch), RegistryJudge())  # type: ignore[arg-type]
    assert isinstance(outcome, ExecutorError) and outcome.failure is Failure.IMAGE_NOT_FOUND
    assert str(outcome).startswith(
        "pulling image nowhere.example.com/x:1 refused: registry nowhere.example.com is a host name that does not "
        "resolve"
    )
    assert "HTTP" not in str(outcome)
