"""One error shape everywhere: unknown paths, methods, bodies, limits and throttles."""

import pytest

from tests.api.answers import ERROR_KEYS, openpai
from tests.factories import v2_yaml
from web.api.throttles import ListThrottle, SubmitThrottle

pytestmark = pytest.mark.django_db


def test_it_answers_no_api_error_for_an_unknown_api_path(alice):
    response = alice.get("/api/v3/whatever")
    assert response.status_code == 404
    assert openpai(response.json()) == {"code": "NoApiError", "message": "GET /api/v3/whatever is not an API."}
    assert response.json()["errors"][0]["code"] == "api.no_such_route"


def test_it_answers_no_api_error_for_an_unknown_path_without_a_token(anonymous):
    response = anonymous.delete("/api/nothing/here")
    assert response.status_code == 404
    assert response.json()["code"] == "NoApiError"


def test_it_answers_405_in_the_same_shape_for_a_wrong_method(alice):
    response = alice.patch("/api/v2/jobs", {}, format="json")
    assert response.status_code == 405
    assert set(response.json()) == ERROR_KEYS


def test_it_answers_400_for_json_that_does_not_parse(alice):
    alice.post("/api/v2/jobs", data=v2_yaml("x"), content_type="text/yaml")
    response = alice.put("/api/v2/jobs/alice~x/executionType", data="{nope", content_type="application/json")
    assert response.status_code == 400
    assert response.json()["code"] == "InvalidParametersError"


def test_it_answers_413_for_a_body_over_the_limit(alice, settings):
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = 1000
    response = alice.post("/api/v2/jobs", data=v2_yaml("big") + "#" * 2000, content_type="text/yaml")
    assert response.status_code == 413
    assert set(response.json()) == ERROR_KEYS


def test_it_throttles_submits_per_user_with_429(alice, monkeypatch):
    monkeypatch.setattr(SubmitThrottle, "rate", "2/min", raising=False)
    statuses = [
        alice.post("/api/v2/jobs", data=v2_yaml(f"j{i}"), content_type="text/yaml").status_code for i in range(2)
    ]
    assert statuses == [202, 202]
    last = alice.post("/api/v2/jobs", data=v2_yaml("j9"), content_type="text/yaml")
    assert last.status_code == 429
    assert last.json()["code"] == "TooManyRequestsError"


def test_it_throttles_lists_per_user_with_429(alice, bob, monkeypatch):
    monkeypatch.setattr(ListThrottle, "rate", "1/min", raising=False)
    assert alice.get("/api/v2/jobs").status_code == 200
    response = alice.get("/api/v2/jobs")
    assert response.status_code == 429
    assert response.json()["code"] == "TooManyRequestsError"
    assert bob.get("/api/v2/jobs").status_code == 200  # per user, not global


def test_it_answers_400_for_an_empty_submit_body(alice):
    response = alice.post("/api/v2/jobs", data="", content_type="text/yaml")
    assert response.status_code == 400
    assert response.json()["code"] == "InvalidProtocolError"


def test_it_answers_400_for_a_body_that_is_not_utf8(alice):
    response = alice.post("/api/v2/jobs", data=b"\xff\xfe\x00name", content_type="text/yaml")
    assert response.status_code == 400
    assert set(response.json()) == ERROR_KEYS


FORM = "multipart/form-data; boundary=BoUnDaRy"
FORM_BODY = (
    b'--BoUnDaRy\r\nContent-Disposition: form-data; name="file"; filename="job.yaml"\r\n\r\nname: x\r\n--BoUnDaRy--\r\n'
)


def test_it_answers_a_form_upload_to_a_json_route_415_naming_the_type_to_send(alice):
    alice.post("/api/v2/jobs", data=v2_yaml("x"), content_type="text/yaml")
    response = alice.generic("PUT", "/api/v2/jobs/alice~x/executionType", FORM_BODY, content_type=FORM)
    assert response.status_code == 415
    assert response.json()["code"] == "InvalidParametersError"
    assert "application/json" in response.json()["message"]
    assert "boundary" not in response.json()["message"]


@pytest.mark.parametrize("path", ["/api/v2/jobs", "/api/v1/jobs"])
def test_it_answers_a_config_sent_as_a_form_upload_415_saying_to_send_the_config_itself(alice, path):
    response = alice.generic("POST", path, FORM_BODY, content_type=FORM)
    assert response.status_code == 415
    assert set(response.json()) == ERROR_KEYS
    assert "text/yaml" in response.json()["message"]


def signed_in_browser(user):
    from django.test import Client

    browser = Client(enforce_csrf_checks=True)
    browser.force_login(user)
    browser.get("/")
    return browser, {"HTTP_X_CSRFTOKEN": browser.cookies["csrftoken"].value}


def test_it_answers_a_form_upload_from_a_signed_in_browser_415(user):
    browser, csrf = signed_in_browser(user)
    response = browser.generic("POST", "/api/v2/jobs", FORM_BODY, content_type=FORM, **csrf)
    assert response.status_code == 415
    assert "text/yaml" in response.json()["message"]


def test_it_takes_a_config_posted_as_a_url_encoded_form_by_a_signed_in_browser(user, default_vc):
    """(curl's default Content-Type; the CSRF check read the config text as a form: 500)"""
    browser, csrf = signed_in_browser(user)
    response = browser.generic(
        "POST", "/api/v2/jobs", v2_yaml("formed"), content_type="application/x-www-form-urlencoded", **csrf
    )
    assert response.status_code == 202, response.content


@pytest.mark.parametrize("path", ["/api/v2/nothing%0a", "/api/v2/jobs%0a", "/rest-server/api/v2/x%0d%0a", "/api/%0a"])
def test_it_answers_no_api_error_for_an_api_path_with_a_line_break(alice, path):
    response = alice.get(path)
    assert response.status_code == 404
    assert response.json()["code"] == "NoApiError"


def test_it_answers_the_schemas_errors_as_json(anonymous):
    response = anonymous.get("/api/schema/")
    assert response.status_code == 401
    assert response["Content-Type"] == "application/json"
    assert response.json()["code"] == "UnauthorizedUserError"


def test_it_still_serves_the_schema_as_yaml(alice):
    response = alice.get("/api/schema/")
    assert response.status_code == 200
    assert response["Content-Type"].startswith("application/vnd.oai.openapi")
