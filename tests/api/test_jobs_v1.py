"""v1 routes: JSON submit (201 + Location), list, detail, stop, config, ssh info and the signed key link."""

import pytest
from django.test import override_settings

from jobs.models import Job
from tests.factories import v1_json
from web.api import links

pytestmark = pytest.mark.django_db


@pytest.fixture
def legacy(alice):
    response = alice.post("/api/v1/user/alice/jobs", data=v1_json("legacy"), content_type="application/json")
    assert response.status_code == 201, response.content
    return response


def test_it_answers_201_with_location_and_the_detail(legacy):
    assert legacy["Location"].endswith("/api/v1/user/alice/jobs/legacy")
    assert legacy.json()["jobStatus"]["state"] == "WAITING"


def test_it_accepts_a_v1_job_on_the_short_route(alice):
    response = alice.post("/api/v1/jobs", data=v1_json("short"), content_type="application/json")
    assert response.status_code == 201


def test_it_refuses_submitting_as_another_user(alice):
    response = alice.post("/api/v1/user/bob/jobs", data=v1_json("sneaky"), content_type="application/json")
    assert response.status_code == 403
    assert response.json()["code"] == "ForbiddenUserError"


def test_it_answers_invalid_parameters_error_for_a_broken_v1_config(alice):
    response = alice.post("/api/v1/jobs", data='{"jobName": "bad name!"}', content_type="application/json")
    assert response.status_code == 400
    assert response.json()["code"] == "InvalidParametersError"


def test_it_lists_v1_jobs_as_an_array(alice, legacy):
    response = alice.get("/api/v1/jobs?username=alice")
    assert response.status_code == 200
    assert [job["name"] for job in response.json()] == ["legacy"]


def test_it_stops_a_job_on_delete_with_202(alice, legacy):
    response = alice.delete("/api/v1/user/alice/jobs/legacy")
    assert response.status_code == 202
    assert Job.objects.get(name="legacy").execution_type == "STOP"


def test_it_hides_another_users_v1_job_with_404(bob, legacy):
    response = bob.delete("/api/v1/user/alice/jobs/legacy")
    assert response.status_code == 404
    assert response.json()["code"] == "NoJobError"


def test_it_sets_the_execution_type_on_the_v1_route(alice, legacy):
    response = alice.put("/api/v1/user/alice/jobs/legacy/executionType", {"value": "STOP"}, format="json")
    assert response.status_code == 202


def test_it_returns_the_submitted_json_config(alice, legacy):
    response = alice.get("/api/v1/user/alice/jobs/legacy/config")
    assert response.status_code == 200
    assert response.json()["jobName"] == "legacy"


def test_it_answers_ssh_info_with_a_key_download_link(alice, legacy):
    response = alice.get("/api/v1/user/alice/jobs/legacy/ssh")
    assert response.status_code == 200
    key_pair = response.json()["keyPair"]
    assert key_pair["privateKeyFileName"] == "legacy.key"
    assert "/api/v1/ssh-keys/" in key_pair["privateKeyDirectDownloadLink"]


def test_it_serves_the_private_key_through_a_fresh_link_without_a_token(alice, anonymous, legacy):
    link = alice.get("/api/v1/user/alice/jobs/legacy/ssh").json()["keyPair"]["privateKeyDirectDownloadLink"]
    response = anonymous.get(link)
    assert response.status_code == 200
    assert b"OPENSSH PRIVATE KEY" in response.content


def test_it_refuses_the_key_link_after_it_expired(alice, anonymous, legacy):
    link = alice.get("/api/v1/user/alice/jobs/legacy/ssh").json()["keyPair"]["privateKeyDirectDownloadLink"]
    with override_settings(PAI_API_SSH_KEY_LINK_SECONDS=-1):
        response = anonymous.get(link)
    assert response.status_code == 403
    assert response.json()["code"] == "ForbiddenUserError"


def test_it_refuses_the_key_link_for_another_key(alice, anonymous, legacy):
    job = Job.objects.get(name="legacy")
    link = links.ssh_key_path(job)
    from jobs.ssh import attach_new_keypair

    attach_new_keypair(job)  # the job's key changes: the old link names a key that is gone
    job.save(update_fields=["ssh_public_key", "ssh_private_key_encrypted"])
    response = anonymous.get(link)
    assert response.status_code == 403
    assert response.json()["code"] == "ForbiddenUserError"


def test_it_refuses_a_key_link_with_a_forged_signature(anonymous, legacy):
    link = links.ssh_key_path(Job.objects.get(name="legacy"))
    forged = link[:-1] + ("A" if link[-1] != "A" else "B")
    response = anonymous.get(forged)
    assert response.status_code == 403
    assert response.json()["code"] == "ForbiddenUserError"


def test_it_answers_the_full_name_v1_routes(alice, legacy):
    assert alice.get("/api/v1/jobs/alice~legacy").json()["name"] == "legacy"
    assert alice.get("/api/v1/jobs/alice~legacy/config").json()["jobName"] == "legacy"
    assert "keyPair" in alice.get("/api/v1/jobs/alice~legacy/ssh").json()
    response = alice.put("/api/v1/jobs/alice~legacy/executionType", {"value": "STOP"}, format="json")
    assert response.status_code == 202
