"""Secrets never leave the portal, and a token never acts beyond the rights it was made for."""

from __future__ import annotations

from pathlib import Path

import pytest
from django.db import connection
from django.test import Client
from rest_framework.test import APIClient

from accounts.models import Token
from clusters.executors.logcap import CappedLog
from jobs.actions import submit_job
from jobs.models import JobState
from tests.api.conftest import bearer_client
from tests.conftest import shared_in_module
from tests.factories import create_job, v2_yaml

SECRET = "hunter2-very-secret-value"
SECRET_JOB = v2_yaml("secretive", 'echo "the token is <% $secrets.token %>"', extra=f"secrets:\n  token: {SECRET}\n")


@pytest.fixture
def finished_secret_job(user, default_vc, process_node, run_until):
    """Alice's job that printed its secret into its log, run to the end on the process node."""
    return run_until(submit_job(user, SECRET_JOB), JobState.SUCCEEDED)


@pytest.fixture
def every_api_answer(alice, finished_secret_job):
    """What alice's token gets from every API route that names the job, as text."""
    name = finished_secret_job.full_name
    logs = f"/api/v2/jobs/{name}/attempts/0/taskRoles/worker/taskIndex/0/attempts/0/logs"  # OpenPAI counts from 0
    log_link = alice.get(logs).json()["locations"][0]["uri"]
    answers = {
        path: alice.get(path).content.decode()
        for path in (
            "/api/v2/jobs",
            f"/api/v2/jobs/{name}",
            f"/api/v2/jobs/{name}/config",
            f"/api/v2/jobs/{name}/ssh",
            f"/api/v2/jobs/{name}/events",
            logs,
            "/api/v1/jobs",
            f"/api/v1/jobs/{name}",
            f"/api/v1/jobs/{name}/config",
        )
    }
    answers["signed log link"] = APIClient().get(log_link).getvalue().decode()
    tail_link = alice.get(logs, {"tail-mode": "true"}).json()["locations"][0]["uri"]
    answers["signed log link, tail mode"] = APIClient().get(tail_link).getvalue().decode()
    return answers


@pytest.fixture
def everything_kept(finished_secret_job, client, user) -> dict[str, object]:
    """What the portal keeps of the job and shows on its pages, after the real run."""
    client.force_login(user)
    name = finished_secret_job.full_name
    rows = {}
    with connection.cursor() as cursor:
        for table in ("jobs_job", "jobs_task", "jobs_jobevent"):
            column = "id" if table == "jobs_job" else "job_id"
            cursor.execute(f"SELECT * FROM {table} WHERE {column} = %s", [finished_secret_job.pk])  # noqa: S608
            rows[table] = cursor.fetchall()
    return {
        "config text": finished_secret_job.config_text,
        "rows": rows,
        "export": client.get(f"/jobs/{name}/export/").content.decode(),
        "task's log": Path(finished_secret_job.tasks.get().log_path).read_text(),
        "job page's log": client.get(f"/jobs/{name}/log").content.decode(),
    }


@pytest.fixture
def after_the_run(every_api_answer, everything_kept) -> dict[str, dict[str, object]]:
    return {"answers": every_api_answer, "kept": everything_kept}


# The tests that only read what the API answers and what the portal keeps share one real run's (one
# run for both: each of the two ran its own before).
shared = shared_in_module("after_the_run")


@pytest.fixture
def answers(shared):
    return shared["answers"]


@pytest.fixture
def kept(shared):
    return shared["kept"]


def test_it_masks_the_secret_in_the_signed_log_link(answers):
    assert "the token is ******" in answers["signed log link"]
    assert "the token is ******" in answers["signed log link, tail mode"]


def test_it_never_puts_the_secret_in_any_api_answer(answers):
    leaking = [path for path, answer in answers.items() if SECRET in answer]
    assert leaking == []


def test_it_stores_the_config_text_without_the_secret(kept):
    assert SECRET not in kept["config text"]
    assert "token: '******'" in kept["config text"]


def test_it_keeps_the_secret_out_of_every_column_of_the_jobs_rows(kept):
    for table, rows in kept["rows"].items():
        assert not [row for row in rows if SECRET in repr(row)], table


def test_it_keeps_the_secret_out_of_the_export(kept):
    exported = kept["export"]
    assert "token: '******'" in exported or 'token: "******"' in exported or "token: ******" in exported
    assert SECRET not in exported


def test_it_still_gives_the_task_the_secret(kept):
    assert "the token is " + SECRET in kept["task's log"]


def test_it_masks_the_secret_in_the_job_pages_log(kept):
    assert "the token is ******" in kept["job page's log"]


# -- tokens ---------------------------------------------------------------------------------------


@pytest.fixture
def alices_job(user, db, default_vc):
    return submit_job(user, v2_yaml("alices"))


def test_it_refuses_an_admins_application_token_another_users_ssh_key(admin_user, alices_job):
    script = bearer_client(admin_user, Token.Kind.APPLICATION)
    for path in (f"/api/v2/jobs/{alices_job.full_name}/ssh", f"/api/v1/jobs/{alices_job.full_name}/ssh"):
        answer = script.get(path)
        assert answer.status_code == 403, path
        assert answer.json()["code"] == "ForbiddenUserError"


def test_it_refuses_an_admins_application_token_stopping_another_users_job(admin_user, alices_job):
    script = bearer_client(admin_user, Token.Kind.APPLICATION)
    answer = script.put(f"/api/v2/jobs/{alices_job.full_name}/executionType", {"value": "STOP"}, format="json")
    assert answer.status_code == 403
    alices_job.refresh_from_db()
    assert alices_job.execution_type == "START"


def test_it_gives_an_application_token_its_own_jobs_ssh_key(user, alices_job):
    script = bearer_client(user, Token.Kind.APPLICATION)
    assert script.get(f"/api/v2/jobs/{alices_job.full_name}/ssh").status_code == 200


def test_it_gives_an_admins_login_token_another_users_ssh_key(root, alices_job):
    assert root.get(f"/api/v2/jobs/{alices_job.full_name}/ssh").status_code == 200


def test_it_revokes_login_tokens_when_the_password_changes(alice, user):
    assert alice.get("/api/v2/jobs").status_code == 200
    user.set_password("a-new-password-42")
    user.save()
    answer = alice.get("/api/v2/jobs")
    assert answer.status_code == 401
    assert answer.json()["code"] == "UnauthorizedUserError"


def test_it_keeps_application_tokens_when_the_password_changes(user):
    script = bearer_client(user, Token.Kind.APPLICATION)
    user.set_password("a-new-password-42")
    user.save()
    assert script.get("/api/v2/jobs").status_code == 200


def test_it_keeps_login_tokens_when_the_user_is_saved_without_a_new_password(alice, user):
    user.first_name = "Alice"
    user.save()
    assert alice.get("/api/v2/jobs").status_code == 200


def test_it_says_on_the_job_page_that_a_cut_log_was_cut(client, user, tmp_path):
    # (A job's rows as its run leaves them, its log cut: the page reads only those.)
    job = create_job(user, "cut", state=JobState.SUCCEEDED)
    log_path = tmp_path / "worker-0.log"
    job.tasks.update(state="SUCCEEDED", log_path=str(log_path))
    with CappedLog(log_path, 4096) as log:
        log.write(b"x" * 100_000)
    client.force_login(user)
    tail = client.get(f"/jobs/{job.full_name}/log", {"tail": 1000}).content
    assert tail.startswith(b"[pai-portal] the log was cut")


# -- origins --------------------------------------------------------------------------------------


@pytest.fixture
def csrf_client(user):
    """A signed-in browser that sends its CSRF token, as a page of a job on another port could."""
    client = Client(enforce_csrf_checks=True)
    client.force_login(user)
    client.get("/storage/")
    return client


def stop_from(client: Client, job, origin: str) -> int:
    token = client.cookies["csrftoken"].value
    answer = client.post(f"/jobs/{job.full_name}/stop/", {"csrfmiddlewaretoken": token}, HTTP_ORIGIN=origin)
    return answer.status_code


def test_it_refuses_a_form_post_from_an_origin_that_differs_only_in_port(csrf_client, alices_job):
    assert stop_from(csrf_client, alices_job, "http://testserver:20002") == 403
    alices_job.refresh_from_db()
    assert alices_job.execution_type == "START"


def test_it_accepts_a_form_post_from_the_portals_own_origin(csrf_client, alices_job):
    assert stop_from(csrf_client, alices_job, "http://testserver") == 302
