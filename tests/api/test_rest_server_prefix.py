"""Every API route is also served under /rest-server/api/ (where OpenPAI's clients look for it),
with or without a trailing slash (OpenPAI's Express server matches both), and answers CORS."""

import pytest

from tests.api.answers import openpai
from tests.factories import v1_json, v2_yaml

pytestmark = pytest.mark.django_db

PREFIXES = ["/api", "/rest-server/api"]


@pytest.fixture(params=PREFIXES)
def prefix(request) -> str:
    return request.param


def test_it_submits_and_reads_a_job_under_either_prefix(alice, prefix):
    created = alice.post(f"{prefix}/v2/jobs", data=v2_yaml("prefixed"), content_type="text/yaml")
    assert created.status_code == 202
    detail = alice.get(f"{prefix}/v2/jobs/alice~prefixed")
    assert detail.status_code == 200
    assert detail.json()["jobStatus"]["state"] == "WAITING"


def test_it_answers_v1_errors_with_v1_codes_under_the_alias(alice):
    response = alice.post("/rest-server/api/v1/jobs", data="{}", content_type="application/json")
    assert response.status_code == 400
    assert response.json()["code"] == "InvalidParametersError"


def test_it_accepts_a_v1_submit_under_the_alias(alice):
    response = alice.post("/rest-server/api/v1/user/alice/jobs", data=v1_json(), content_type="application/json")
    assert response.status_code == 201
    assert response["Location"].endswith("/api/v1/user/alice/jobs/legacy")


def test_it_serves_a_route_with_a_trailing_slash(alice, prefix):
    response = alice.get(f"{prefix}/v2/users/alice/")
    assert response.status_code == 200
    assert response.json()["username"] == "alice"


def test_it_accepts_a_post_with_a_trailing_slash(root, prefix):
    response = root.post(f"{prefix}/v2/users/", {"username": "carol", "password": "carol-password-9"}, format="json")
    assert response.status_code == 201


def test_it_answers_an_unknown_path_with_no_api_error(alice, prefix):
    response = alice.get(f"{prefix}/v3/whatever/")
    assert response.status_code == 404
    assert openpai(response.json()) == {"code": "NoApiError", "message": f"GET {prefix}/v3/whatever/ is not an API."}


def test_it_answers_a_cors_preflight_without_credentials(anonymous, prefix):
    response = anonymous.options(
        f"{prefix}/v2/jobs",
        HTTP_ORIGIN="https://webportal.example.org",
        HTTP_ACCESS_CONTROL_REQUEST_METHOD="POST",
        HTTP_ACCESS_CONTROL_REQUEST_HEADERS="authorization,content-type",
    )
    assert response.status_code == 200
    assert response["Access-Control-Allow-Origin"] == "*"
    assert "authorization" in response["Access-Control-Allow-Headers"]
    assert "Access-Control-Allow-Credentials" not in response


def test_it_adds_cors_headers_to_api_answers_only(alice):
    assert alice.get("/api/v2/info", HTTP_ORIGIN="https://x.example")["Access-Control-Allow-Origin"] == "*"
    assert "Access-Control-Allow-Origin" not in alice.get("/login/", HTTP_ORIGIN="https://x.example")
