"""Every route of the API URLconf answers the same under /api/ and /rest-server/api/ (one URLconf
included twice): walked from web.api.urls itself, so a route added later is covered too."""

import re

import pytest
from django.urls import URLPattern

from clusters.models import VirtualCluster
from tests.api.conftest import bearer_client
from tests.conftest import rows_for_module
from tests.factories import create_job, create_user, v2_yaml
from web.api import urls

pytestmark = pytest.mark.django_db

# A value for each path parameter, naming things the fixture below creates (a new route's new
# parameter needs a value here: the KeyError names it).
VALUES = {
    "full_name": "alice~routed",
    "username": "alice",
    "job_name": "routed",
    "job_attempt": "0",
    "role": "worker",
    "index": "0",
    "task_attempt": "0",
    "token": "not-a-token",
    "vc_name": "default",
    "node_name": "no-node",
    "storage_name": "no-storage",
    "template_id": "1",
    "rule_id": "1",
    "groupname": "no-group",
    "slug": "no-app",
}
DOCS = {"api-schema", "api-docs", "api-redoc", "api-none"}  # the docs are one page, not two APIs


def concrete(pattern: URLPattern) -> str:
    """The pattern's path with VALUES in its parameters."""
    route = re.sub(r"\(\?P<(\w+)>[^)]*\)", lambda match: VALUES[match.group(1)], str(pattern.pattern))
    route = re.sub(r"<(?:\w+:)?(\w+)>", lambda match: VALUES[match.group(1)], route)
    return route.lstrip("^").rstrip("$")


def first_method(pattern: URLPattern) -> str:
    view = pattern.callback.cls  # type: ignore[attr-defined]
    return next(method for method in ("get", "put", "post", "delete") if hasattr(view, method))


ROUTES = [pattern for pattern in urls.urlpatterns if isinstance(pattern, URLPattern) and pattern.name not in DOCS]


@pytest.fixture(scope="module")
def alice_and_routed_job(django_db_setup, django_db_blocker):
    """alice and alice~routed as a submit leaves it, written as rows once for the module
    (`rows_for_module`): what a route answers about a job is not what this file checks, only that
    both prefixes answer it alike (89 API submits were a fifth of the file's CPU, then a user and a
    job per route another); what a route changes (a stop, a deletion) its test's transaction undoes."""

    def make():
        alice = create_user("alice")
        default_vc = VirtualCluster.objects.get_or_create(name="default", defaults={"share_percent": 100})[0]
        return alice, create_job(alice, "routed", config_text=v2_yaml("routed"), virtual_cluster=default_vc)

    yield from rows_for_module(django_db_blocker, make)


@pytest.fixture
def user(alice_and_routed_job):
    return alice_and_routed_job[0]


@pytest.fixture
def routed_job(alice_and_routed_job):
    return alice_and_routed_job[1]


@pytest.mark.parametrize("pattern", ROUTES, ids=[pattern.name for pattern in ROUTES])
def test_each_route_answers_alike_under_both_prefixes(pattern, user, routed_job):
    method, path = first_method(pattern), concrete(pattern)
    answers = []
    for prefix in ("/api/", "/rest-server/api/"):
        client = bearer_client(user)  # each call its own token: a logout revokes only its own
        response = getattr(client, method)(prefix + path, {}, format="json")
        body = response.json() if response["Content-Type"].startswith("application/json") else None
        assert not (isinstance(body, dict) and body.get("code") == "NoApiError"), (prefix + path, body)
        assert response.status_code not in (405, 500), (prefix + path, body)
        answers.append((response.status_code, body.get("code") if isinstance(body, dict) else None))
    assert answers[0] == answers[1], (path, answers)
