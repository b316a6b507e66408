"""Web page fixtures: signed-in clients and jobs written straight into the database."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from django.test import Client

from jobs.models import Job, JobEvent
from jobs.protocol.spec import NormalizedSpec
from tests.factories import create_job, normalized_spec, v1_json, v2_yaml

SECRET_LINES = "secrets:\n  token: s3cr3t-value\n"


def v2_config(name: str) -> str:
    """The config the web tests paste, import and store: one 1 GB role and a secret."""
    return v2_yaml(name, memory_mb=1024, extra=SECRET_LINES)


def v1_config(name: str) -> str:
    return v1_json(name, retryCount=0)


def spec_of(name: str, roles: dict[str, int] | None = None) -> NormalizedSpec:
    """A small normalized spec, enough for the pages (the list never reads it)."""
    return normalized_spec(name, roles or {"worker": 1}, secrets={"token": "******"})


@pytest.fixture
def make_job(default_vc) -> Callable[..., Job]:
    """A job row with its tasks, as the scheduler would have left it."""

    def make(owner, name: str = "job", state: str = "WAITING", roles: dict[str, int] | None = None, **fields) -> Job:
        fields.setdefault("virtual_cluster", default_vc)
        job = create_job(
            owner, name, roles=roles, spec=spec_of(name, roles), state=state, config_text=v2_config(name), **fields
        )
        JobEvent.objects.create(job=job, kind="submitted", message="Submitted to virtual cluster default.")
        return job

    return make


@pytest.fixture
def alice_client(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


@pytest.fixture
def bob_client(other_user) -> Client:
    client = Client()
    client.force_login(other_user)
    return client
