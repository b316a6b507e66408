"""The webhooks page: add one (its secret shown once), refusals in the page saying why, remove after
asking; nobody sees another's hooks; admins add the deployment's."""

from __future__ import annotations

import pytest

from jobs.models import Webhook

pytestmark = pytest.mark.django_db


@pytest.fixture
def public_dns(monkeypatch):
    """example.org resolves to a public address (no network in tests)."""
    import socket

    real = socket.getaddrinfo

    def fake(host, *args, **kwargs):
        if host.endswith("example.org"):
            return [(socket.AF_INET, socket.SOCK_STREAM, 6, "", ("93.184.215.14", 443))]
        return real(host, *args, **kwargs)

    monkeypatch.setattr(socket, "getaddrinfo", fake)


def test_it_adds_a_webhook_and_shows_its_secret_once(alice_client, user, public_dns):
    answer = alice_client.post(
        "/profile/webhooks/", {"url": "https://hooks.example.org/x", "events": ["failed", "running"]}
    )
    assert answer.status_code == 200
    hook = Webhook.objects.get()
    assert (hook.owner, hook.events) == (user, ["running", "failed"])
    assert b"data-webhook-secret" in answer.content
    assert b"data-webhook-secret" not in alice_client.get("/profile/webhooks/").content


def test_it_says_why_a_url_is_refused(alice_client):
    answer = alice_client.post("/profile/webhooks/", {"url": "http://10.0.0.7/hook", "events": ["failed"]})
    assert answer.status_code == 400
    assert b"points at a private address (10.0.0.7)" in answer.content
    assert Webhook.objects.count() == 0


def test_it_asks_for_at_least_one_state(alice_client, public_dns):
    answer = alice_client.post("/profile/webhooks/", {"url": "https://hooks.example.org/x"})
    assert answer.status_code == 400 and b"pick at least one of" in answer.content


def test_nobody_sees_or_removes_anothers_webhook(alice_client, bob_client, public_dns):
    alice_client.post("/profile/webhooks/", {"url": "https://hooks.example.org/alice", "events": ["failed"]})
    hook = Webhook.objects.get()
    assert b"hooks.example.org/alice" not in bob_client.get("/profile/webhooks/").content
    assert bob_client.post(f"/profile/webhooks/{hook.pk}/remove/").status_code == 404
    assert Webhook.objects.exists()


def test_it_asks_before_removing_then_removes(alice_client, public_dns):
    alice_client.post("/profile/webhooks/", {"url": "https://hooks.example.org/x", "events": ["failed"]})
    hook = Webhook.objects.get()
    assert b"Remove this webhook?" in alice_client.get(f"/profile/webhooks/{hook.pk}/remove/").content
    assert alice_client.post(f"/profile/webhooks/{hook.pk}/remove/").status_code == 302
    assert not Webhook.objects.exists()


def test_only_an_admin_adds_a_webhook_for_every_users_jobs(alice_client, admin_client, public_dns):
    alice_client.post("/profile/webhooks/", {"url": "https://a.example.org/x", "events": ["failed"], "everyone": "on"})
    admin_client.post("/profile/webhooks/", {"url": "https://b.example.org/x", "events": ["failed"], "everyone": "on"})
    assert [(h.url, h.owner_id is None) for h in Webhook.objects.order_by("id")] == [
        ("https://a.example.org/x", False),
        ("https://b.example.org/x", True),
    ]
