"""Webhooks for real: a local HTTP server receives the signed POSTs of a job's changes, sent from
the outbox (never by the scheduler's pass), retried with backoff while it fails; targets inside the
portal's network refused unless an admin allows them."""

from __future__ import annotations

import hashlib
import hmac
import json
import re
from datetime import timedelta
from typing import Any

import pytest
from django.utils import timezone

from jobs import lifecycle, outbox, webhooks
from jobs.crypto import encrypt_text
from jobs.models import Job, JobState, Webhook, WebhookDelivery
from tests.factories import create_job
from tests.messages import param
from tests.scheduler.conftest import role, v2_job

pytestmark = pytest.mark.django_db


def deliver_everything() -> None:
    """The outbox's sender, with its clock moved past every backoff (and the digests' window)."""
    for _ in range(10):
        if not outbox.deliver_due(timezone.now() + timedelta(days=1)):
            return


def a_job_succeeds(owner: Any) -> Job:
    """A job's success as the scheduler's pass records it (the first test runs one for real)."""
    job = create_job(owner, "done", state=JobState.RUNNING)
    assert lifecycle.succeed(job, -220)
    return job


def test_a_job_posts_each_state_its_owner_picked_signed_with_the_hooks_secret(user, receiver, submit, run_until):
    _, secret = webhooks.create_hook(user, receiver.url, ["running", "succeeded"])

    job = run_until(submit(v2_job("done", role("worker", "true"))), JobState.SUCCEEDED)
    assert receiver.posts == []  # nothing is sent by the scheduler itself
    deliver_everything()

    assert receiver.events() == ["running", "succeeded"]
    post = receiver.posts[1]
    assert post["path"] == "/hooks/pai?team=a"
    headers, body = post["headers"], post["body"]
    expected = hmac.new(secret.encode(), headers["X-PAI-Timestamp"].encode() + b"." + body, hashlib.sha256)
    assert headers["X-PAI-Signature"] == "sha256=" + expected.hexdigest()
    payload = json.loads(body)
    assert payload["text"].startswith(f"Job {job.full_name} succeeded: http")
    assert payload["job"]["state"] == "SUCCEEDED" and payload["job"]["username"] == "alice"


def test_a_retried_job_posts_retried(user, receiver, submit, run_until):
    webhooks.create_hook(user, receiver.url, ["retried", "failed"])
    run_until(submit(v2_job("flaky", role("worker", "exit 3"), extra="jobRetryCount: 1\n")), JobState.FAILED)
    deliver_everything()
    assert receiver.events() == ["retried", "failed"]


def test_a_failed_jobs_post_carries_its_exit_diagnostics_by_their_code_beside_the_english(
    user, receiver, submit, run_until
):
    webhooks.create_hook(user, receiver.url, ["failed"])
    run_until(submit(v2_job("broken", role("worker", "exit 3"))), JobState.FAILED)
    deliver_everything()
    job = json.loads(receiver.posts[0]["body"])["job"]
    [message] = job["exitDiagnosticsMessages"]
    assert message["code"] == "exit.task" and message["message"] == job["exitDiagnostics"]


def test_a_hook_hears_only_its_owners_jobs_and_a_deployment_hook_hears_everyones(
    user, other_user, admin_user, receiver
):
    webhooks.create_hook(other_user, receiver.url, ["succeeded"])
    webhooks.create_hook(admin_user, receiver.url, ["succeeded"], everyone=True)
    a_job_succeeds(user)
    deliver_everything()
    assert receiver.events() == ["succeeded"]  # the deployment's hook only


def test_a_failing_receiver_is_tried_again_later_until_it_answers(user, receiver):
    webhooks.create_hook(user, receiver.url, ["succeeded"])
    receiver.statuses = [500, 503]
    a_job_succeeds(user)

    assert outbox.deliver_due() == 1
    delivery = WebhookDelivery.objects.get()
    assert delivery.last_status == "500" and delivery.delivered_at is None
    assert delivery.next_attempt_at is not None
    assert timedelta(seconds=25) < delivery.next_attempt_at - timezone.now() <= timedelta(seconds=30)
    assert outbox.deliver_due() == 0  # not before its backoff
    deliver_everything()
    delivery.refresh_from_db()
    assert delivery.attempts == 3 and delivery.delivered_at is not None and len(receiver.posts) == 3
    assert len({post["headers"]["X-PAI-Delivery"] for post in receiver.posts}) == 1  # one id: dropped as repeats


def test_a_receiver_that_never_answers_well_is_given_up(user, receiver):
    webhooks.create_hook(user, receiver.url, ["succeeded"])
    receiver.statuses = [500] * 20
    a_job_succeeds(user)
    deliver_everything()
    delivery = WebhookDelivery.objects.get()
    assert delivery.attempts == 6 and delivery.next_attempt_at is None and delivery.delivered_at is None


@pytest.mark.parametrize(
    ("url", "says"),
    [
        ("http://127.0.0.1:9/x", "a loopback address"),
        ("http://localhost/x", "a loopback address"),
        ("http://10.1.2.3/x", "a private address"),
        ("http://169.254.169.254/latest/meta-data", "a link-local address"),
        ("http://[::1]/x", "a loopback address"),
        ("http://0x7f.1/x", "a loopback address"),
        ("http://100.100.100.200/latest/meta-data", "a shared address"),  # 100.64.0.0/10: a cloud's metadata
        ("http://[fec0::1]/x", "a site-local address"),
        ("ftp://example.org/x", "http:// or https://"),
        ("http://user:pw@example.org/x", "user name or password"),
    ],
)
def test_it_refuses_a_target_inside_the_portals_network(user, url, says):
    with pytest.raises(webhooks.TargetError, match=says):
        webhooks.create_hook(user, url, ["failed"])


def test_it_says_why_a_target_is_refused_by_its_code_and_the_addresss_kind(user):
    with pytest.raises(webhooks.TargetError) as refused:
        webhooks.create_hook(user, "http://10.1.2.3/x", ["failed"])
    message = refused.value.message
    assert (message.code, param(message, "place").code) == ("webhook.inside", "address.private")
    assert param(message, "address") == "10.1.2.3" and str(refused.value) == message.text


@pytest.mark.parametrize(
    ("url", "events", "code"),
    [
        ("ftp://example.org/x", ["failed"], "webhook.not_http"),
        ("http://user:pw@example.org/x", ["failed"], "webhook.credentials"),
        ("http://example.org:99999/x", ["failed"], "webhook.bad_port"),
        ("http://nowhere.invalid/x", ["failed"], "webhook.no_host"),
        ("http://93.184.215.14/x", [], "webhook.pick_events"),
        ("http://93.184.215.14/x", ["failed"], "webhook.too_many"),
    ],
)
def test_each_refusal_has_its_code(user, url, events, code, monkeypatch):
    def no_such_host(host, *args, **kwargs):
        raise OSError("no such host")

    if "nowhere" in url:
        monkeypatch.setattr(webhooks.socket, "getaddrinfo", no_such_host)
    monkeypatch.setattr(webhooks, "MAX_HOOKS_PER_USER", 0)
    with pytest.raises(webhooks.TargetError) as refused:
        webhooks.create_hook(user, url, events)
    assert refused.value.message.code == code


def test_the_webhooks_page_shows_a_refusal_in_the_readers_language(client, user, settings):
    settings.LANGUAGE_CODE = "zh-hans"
    client.force_login(user)
    page = client.post("/profile/webhooks/", {"url": "ftp://example.org/x", "events": ["failed"]})
    said = re.search(r"data-webhook-error>([^<]*)", page.content.decode())
    assert page.status_code == 400 and said is not None and said[1] == "必须是 http:// 或 https:// 开头的 URL"


def test_a_hook_saved_before_its_target_was_refused_is_not_called(user):
    Webhook.objects.create(
        owner=user, url="http://100.100.100.200/latest/meta-data", secret_encrypted=encrypt_text("s"), events=["alert"]
    )
    webhooks.forget_hooks()  # (the hooks are cached per process)
    webhooks.enqueue_alert(user.pk, None, "a test alert")
    outbox.deliver_due()
    assert WebhookDelivery.objects.get().last_status.startswith("refused: points at a shared address")


def test_an_admin_may_allow_an_inside_host(user, settings):
    settings.PAI_WEBHOOK_ALLOWED_HOSTS = ["10.1.2.3"]
    assert webhooks.check_target("http://10.1.2.3:8080/x").address == "10.1.2.3"


def test_a_target_that_turned_inside_since_it_was_saved_is_not_called(user, receiver, settings):
    webhooks.create_hook(user, receiver.url, ["succeeded"])
    settings.PAI_WEBHOOK_ALLOWED_HOSTS = []
    a_job_succeeds(user)
    outbox.deliver_due()
    assert receiver.posts == []
    assert WebhookDelivery.objects.get().last_status.startswith("refused: points at a loopback address")
