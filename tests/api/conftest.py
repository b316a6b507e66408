"""API fixtures: clients signed in with a Bearer token, job configs, a process node + scheduler."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from rest_framework.test import APIClient

from accounts.models import Token
from accounts.tokens import issue_token
from tests.scheduler.conftest import process_node, run_until, scheduler  # noqa: F401  (fixtures)


def bearer_client(user, kind: str = Token.Kind.LOGIN) -> APIClient:
    raw, _ = issue_token(user, kind)
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {raw}")
    return client


@pytest.fixture
def anonymous() -> APIClient:
    return APIClient()


@pytest.fixture
def alice(user) -> APIClient:
    return bearer_client(user)


@pytest.fixture
def bob(other_user) -> APIClient:
    return bearer_client(other_user)


@pytest.fixture
def root(admin_user) -> APIClient:
    return bearer_client(admin_user)


SubmitFn = Callable[..., object]


@pytest.fixture
def submit_yaml(alice) -> SubmitFn:
    def post(text: str, client: APIClient | None = None):
        return (client or alice).post("/api/v2/jobs", data=text, content_type="text/yaml")

    return post
