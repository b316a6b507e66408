"""Every hostile input issue 15 (finding 6) found answering 500 gets a 4xx: `{code, message}`
from the API, the form's error from the pages."""

from __future__ import annotations

import pytest
from django.test import Client

from tests.factories import v1_json, v2_yaml

BIG_NUMBER = "9" * 5000  # Python refuses to read integers over 4,300 digits

MULTIPART = "multipart/form-data; boundary=xyz"
FORM_PART = '--xyz\r\nContent-Disposition: form-data; name="username"\r\n\r\nalice\r\n--xyz--\r\n'
API_POSTS = {
    "v2 YAML with a 5000-digit integer": (
        "/api/v2/jobs",
        "text/yaml",
        v2_yaml("big", extra=f"jobRetryCount: {BIG_NUMBER}\n"),
    ),
    "v1 JSON with a 5000-digit integer": (
        "/api/v1/jobs",
        "application/json",
        v1_json("big").replace('"taskNumber": 1', f'"taskNumber": {BIG_NUMBER}'),
    ),
    "v2 JSON with a 5000-digit integer": (
        "/api/v2/jobs",
        "application/json",
        f'{{"protocolVersion": 2, "name": "x", "jobRetryCount": {BIG_NUMBER}}}',
    ),
    "a login whose JSON holds a 5000-digit integer": (
        "/api/v2/authn/basic/login",
        "application/json",
        f'{{"username": "alice", "password": {BIG_NUMBER}}}',
    ),
    "a multipart body to the submit route": ("/api/v2/jobs", MULTIPART, FORM_PART),
    "a multipart body to the login route": ("/api/v2/authn/basic/login", MULTIPART, FORM_PART),
    "a multipart body without a boundary": ("/api/v2/tokens/application", "multipart/form-data", "whatever"),
}


@pytest.mark.parametrize("route, content_type, body", API_POSTS.values(), ids=API_POSTS.keys())
def test_it_answers_a_hostile_api_body_with_a_4xx_and_code_and_message(alice, default_vc, route, content_type, body):
    response = alice.post(route, data=body, content_type=content_type)
    assert 400 <= response.status_code < 500
    answer = response.json()
    assert answer["code"] and answer["message"]


def test_it_answers_revoking_a_45_digit_token_id_with_404(alice):
    response = alice.delete("/api/v2/tokens/" + "1" * 45)
    assert response.status_code == 404
    assert response.json()["code"] == "NoTokenError"


def test_it_ignores_job_ids_too_big_for_the_database_in_the_states_poll(alice_client):
    response = alice_client.get("/jobs/states.json", {"ids": "1" * 58 + ",1"})
    assert response.status_code == 200
    assert response.json()["states"] == {}


@pytest.fixture
def storage_client(alice_client, settings, tmp_path) -> Client:
    settings.PAI_FS_ROOT = tmp_path / "fs"
    return alice_client


def test_it_refuses_a_storage_path_with_a_nul_character(storage_client):
    response = storage_client.get("/storage/", {"path": "\x00"})
    assert response.status_code == 400
    assert b"NUL" in response.content


def test_it_refuses_an_upload_into_a_path_that_is_a_file(storage_client, tmp_path):
    from django.core.files.uploadedfile import SimpleUploadedFile

    storage_client.post("/storage/", {"action": "upload", "path": "", "files": SimpleUploadedFile("notes", b"x")})
    upload = SimpleUploadedFile("more", b"y")
    response = storage_client.post("/storage/", {"action": "upload", "path": "notes", "files": upload}, follow=True)
    assert "notes: is a file, not a folder" in response.content.decode()


SUBMIT_TEXTS = {
    "5000 [": "[" * 5000,
    "5000 {": "{" * 5000,
    "3000 '- '": "- " * 3000,
    "a 5000-digit integer": v2_yaml("big", extra=f"jobRetryCount: {BIG_NUMBER}\n"),
}


@pytest.mark.parametrize("text", SUBMIT_TEXTS.values(), ids=SUBMIT_TEXTS.keys())
@pytest.mark.parametrize("action", ["submit", "export", "to_form"])
def test_it_shows_a_config_error_for_a_hostile_pasted_text(alice_client, default_vc, text, action):
    response = alice_client.post("/submit/", {"mode": "text", "action": action, "config_text": text})
    assert response.status_code == 400
    assert b"error" in response.content


def test_it_shows_a_form_error_for_a_deeply_nested_base_config(alice_client, default_vc):
    nested = "[" * 100_000 + "]" * 100_000
    fields = {"mode": "form", "action": "submit", "name": "deep", "base_config": nested}
    response = alice_client.post("/submit/", {**fields, "roles-0-name": "worker", "roles-0-command": "echo"})
    assert response.status_code == 400
    assert "hidden config is not valid" in response.content.decode()


def test_it_opens_a_config_whose_task_roles_are_a_number_in_the_form(alice_client, default_vc):
    text = "protocolVersion: 2\nname: odd\ntaskRoles: 5\n"
    response = alice_client.post("/submit/", {"mode": "text", "action": "to_form", "config_text": text})
    assert response.status_code in (200, 400)
