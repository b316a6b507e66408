"""The bad inputs issue 29 (finding 5) found answering 500 (or nothing) get a 4xx."""

from __future__ import annotations

import json

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from tests.factories import v1_json, v2_yaml

SURROGATE = "\ud800"
HUGE_GPU = "9" * 30


def _api_answer(response) -> dict:
    assert 400 <= response.status_code < 500, response.content[:300]
    answer = json.loads(response.content)
    assert answer["code"] and answer["message"]
    return answer


def test_it_refuses_a_30_digit_gpu_on_the_api(alice, default_vc):
    text = v2_yaml("gpus").replace("gpu: 0", f"gpu: {HUGE_GPU}")
    answer = _api_answer(alice.post("/api/v2/jobs", data=text, content_type="text/yaml"))
    assert "gpu" in answer["message"]


@pytest.mark.parametrize("action", ["submit", "export", "to_form"])
def test_it_refuses_a_30_digit_gpu_on_the_submit_page(alice_client, default_vc, action):
    text = v2_yaml("gpus").replace("gpu: 0", f"gpu: {HUGE_GPU}")
    response = alice_client.post("/submit/", {"mode": "text", "action": action, "config_text": text})
    assert 400 <= response.status_code < 500
    assert "gpu" in response.content.decode()


def _surrogate_texts():
    return {
        "v2 yaml": ("/api/v2/jobs", "text/yaml", v2_yaml("a" + SURROGATE)),
        "v2 json": ("/api/v2/jobs", "application/json", json.dumps({"protocolVersion": 2, "name": "a" + SURROGATE})),
        "v1 json": ("/api/v1/jobs", "application/json", v1_json("a" + SURROGATE)),
        "v1 user json": ("/api/v1/user/alice/jobs", "application/json", v1_json("a" + SURROGATE)),
    }


@pytest.mark.parametrize("case", ["v2 yaml", "v2 json", "v1 json", "v1 user json"])
def test_it_refuses_a_lone_surrogate_in_a_job_name_on_the_api(alice, default_vc, case):
    route, content_type, text = _surrogate_texts()[case]
    body = text.encode("utf-8", "surrogatepass")
    _api_answer(alice.generic("POST", route, data=body, content_type=content_type))


ESCAPED_SURROGATE_NAME = '"a\\ud800"'  # as a JSON or YAML double-quoted escape: what reaches the parser


@pytest.mark.parametrize("action", ["submit", "export", "to_form"])
def test_it_refuses_a_lone_surrogate_in_a_pasted_job_name(alice_client, default_vc, action):
    fields = {"mode": "text", "action": action, "config_text": v2_yaml(ESCAPED_SURROGATE_NAME)}
    response = alice_client.post("/submit/", fields)
    assert 400 <= response.status_code < 500
    assert "name" in response.content.decode()


@pytest.mark.parametrize("action", ["submit", "export", "to_form", "to_yaml"])
def test_it_refuses_a_lone_surrogate_in_the_forms_hidden_config(alice_client, default_vc, action):
    fields = {"mode": "form", "action": action, "name": "ok", "base_config": '{"description": "\\ud800"}'}
    response = alice_client.post("/submit/", {**fields, "roles-0-name": "worker", "roles-0-command": "echo"})
    assert 400 <= response.status_code < 500


@pytest.mark.parametrize("action", ["submit", "export", "to_form"])
def test_it_refuses_an_imported_file_with_a_lone_surrogate(alice_client, default_vc, action):
    upload = SimpleUploadedFile("job.yaml", v2_yaml(ESCAPED_SURROGATE_NAME).encode())
    response = alice_client.post("/submit/", {"mode": "file", "action": action, "config_file": upload})
    assert 400 <= response.status_code < 500


def test_it_refuses_a_base_config_whose_prerequisites_are_a_number(alice_client, default_vc):
    fields = {"mode": "form", "action": "submit", "name": "pre", "base_config": '{"prerequisites": 5}'}
    response = alice_client.post("/submit/", {**fields, "roles-0-name": "worker", "roles-0-command": "echo"})
    assert 400 <= response.status_code < 500


def test_it_refuses_a_storage_path_with_a_very_long_name(alice_client, settings, tmp_path):
    settings.PAI_FS_ROOT = tmp_path / "fs"
    response = alice_client.get("/storage/", {"path": "n" * 5000})
    assert 400 <= response.status_code < 500


def test_it_answers_a_v2_config_nested_2000_blocks_deep(alice, default_vc):
    text = (
        "protocolVersion: 2\nname: deep\n"
        + "".join("  " * depth + "a:\n" for depth in range(2000))
        + "  " * 2000
        + "b: 1\n"
    )
    _api_answer(alice.post("/api/v2/jobs", data=text, content_type="text/yaml"))


def test_it_says_where_a_body_stops_being_utf8(alice, default_vc):
    body = v2_yaml("a" + SURROGATE).encode("utf-8", "surrogatepass")
    answer = _api_answer(alice.generic("POST", "/api/v2/jobs", data=body, content_type="text/yaml"))
    assert "at line 2, column 8 (byte 27)" in answer["message"]
