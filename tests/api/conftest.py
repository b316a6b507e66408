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


def shared_in_module(name: str):
    """A fixture giving what fixture `name` gave its module's first test that asked: answers a
    real run gave (plain data, never rows, which each test's transaction rolls back), read by
    tests that only read them, so the module runs its job once (per xdist worker) instead of
    once per test. Kept on the module itself: a module-scoped fixture would make pytest reorder
    the tests around it."""

    @pytest.fixture
    def shared(request):
        answers = request.module.__dict__.setdefault("_answers_shared_in_module", {})
        if name not in answers:
            answers[name] = request.getfixturevalue(name)
        return answers[name]

    return shared
