"""Key download, SSH info and the terminal page: the owner and admins only; others get 404."""

import pytest
from django.urls import reverse

pytestmark = pytest.mark.django_db


@pytest.fixture
def job(make_job):
    return make_job()


def key_url(job):
    return reverse("jobs_ssh:key", args=[job.full_name])


def info_url(job):
    return reverse("jobs_ssh:info", args=[job.full_name])


def terminal_url(job, role="worker", index=0):
    return reverse("jobs_ssh:terminal", args=[job.full_name, role, index])


def test_it_lets_the_owner_download_the_private_key_as_an_attachment(client, user, job):
    client.force_login(user)
    response = client.get(key_url(job))
    assert response.status_code == 200
    assert response.content.decode().startswith("-----BEGIN OPENSSH PRIVATE KEY-----")
    assert response["Content-Disposition"] == 'attachment; filename="ssh-demo.key"'
    assert response["Cache-Control"] == "no-store"


def test_it_lets_an_admin_download_the_key(client, admin_user, job):
    client.force_login(admin_user)
    assert client.get(key_url(job)).status_code == 200


@pytest.mark.parametrize("url", [key_url, info_url, terminal_url])
def test_it_answers_404_to_another_user(client, other_user, job, url):
    client.force_login(other_user)
    assert client.get(url(job)).status_code == 404


@pytest.mark.parametrize("url", [key_url, info_url, terminal_url])
def test_it_sends_anonymous_visitors_to_the_login_page(client, job, url):
    response = client.get(url(job))
    assert response.status_code == 302
    assert response["Location"].startswith("/login/")


def test_it_answers_the_ssh_info_as_json(client, user, job):
    client.force_login(user)
    body = client.get(info_url(job)).json()
    assert body == {"keyUrl": key_url(job), "keyFileName": "ssh-demo.key", "tasks": []}


def test_it_renders_the_terminal_page_with_its_websocket_path(client, user, job):
    client.force_login(user)
    response = client.get(terminal_url(job))
    assert response.status_code == 200
    assert b'data-socket-path="/ws/jobs/alice~ssh-demo/terminal/worker/0/"' in response.content
    assert b"vendor/xterm/xterm.js" in response.content


def test_it_answers_404_for_a_task_the_job_does_not_have(client, user, job):
    client.force_login(user)
    assert client.get(terminal_url(job, index=5)).status_code == 404
