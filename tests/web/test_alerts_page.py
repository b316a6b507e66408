"""The alerts page: admins add rules (each bad field said in the page) and remove them after
asking; everyone sees the alerts about their own jobs."""

from __future__ import annotations

import pytest
from django.utils import timezone

from catalogue import Message
from scheduling.models import Alert, AlertRule
from tests.factories import create_job

pytestmark = pytest.mark.django_db


def test_an_admin_adds_a_rule(admin_client):
    answer = admin_client.post(
        "/alerts/",
        {
            "name": "idle-gpus",
            "condition": "gpu_idle",
            "minutes": "60",
            "percent": "5",
            "grace": "30",
            "actions": ["notify_owner", "stop_job"],
        },
    )
    assert answer.status_code == 302
    rule = AlertRule.objects.get()
    assert (rule.condition, rule.minutes, rule.actions) == ("gpu_idle", 60, ["notify_owner", "stop_job"])
    assert b"a running job&#x27;s GPUs under 5 % for 60 minutes" in admin_client.get("/alerts/").content


def test_it_says_each_bad_field(admin_client):
    answer = admin_client.post(
        "/alerts/", {"name": "", "condition": "cpu_hot", "minutes": "soon", "actions": ["page_me"]}
    )
    assert answer.status_code == 400
    page = answer.content.decode()
    for says in (
        "name</span>: must be a name",
        "condition</span>: must be one of",
        "minutes</span>: must be a whole number",
        "actions</span>: must list",
    ):
        assert says in page, says
    assert not AlertRule.objects.exists()


def test_it_says_each_bad_field_and_what_an_alert_did_in_the_readers_language(admin_client, user, settings):
    settings.LANGUAGE_CODE = "zh-hans"
    page = admin_client.post("/alerts/", {"name": "", "condition": "node_down", "minutes": "0"}).content.decode()
    assert "name</span>: 必须是" in page and "must be" not in page
    rule = AlertRule.objects.create(name="down", condition="node_down")
    history = [
        {"at": "x", "what": "fired", "message": Message.of("alert.fired").as_dict()},
        {"at": "x", "what": "cordoned gpu-3", "message": Message.of("alert.cordoned", node="gpu-3").as_dict()},
        {"at": "x", "what": "notified the admins"},  # (an entry older than its code: as written)
    ]
    Alert.objects.create(rule=rule, subject="node gpu-3", summary="s", fired_at=timezone.now(), history=history)
    page = admin_client.get("/alerts/").content.decode()
    assert "已触发" in page and "gpu-3" in page and "notified the admins" in page and "cordoned" not in page


def test_a_user_may_not_add_rules(alice_client):
    assert alice_client.post("/alerts/", {"name": "x", "condition": "node_down"}).status_code == 403
    assert alice_client.get("/alerts/rules/1/remove/").status_code == 403


def test_an_admin_removes_a_rule_after_asking(admin_client):
    rule = AlertRule.objects.create(name="down", condition="node_down")
    assert b"Remove the alert rule" in admin_client.get(f"/alerts/rules/{rule.pk}/remove/").content
    admin_client.post(f"/alerts/rules/{rule.pk}/remove/")
    assert not AlertRule.objects.exists()


def test_a_user_sees_the_alerts_about_their_jobs_only(alice_client, user, other_user, default_vc):
    rule = AlertRule.objects.create(name="long", condition="job_too_long")
    for owner in (user, other_user):
        job = create_job(owner, f"{owner.username}-job", state="RUNNING")
        Alert.objects.create(
            rule=rule,
            subject=f"job {job.full_name}",
            job=job,
            summary="s",
            fired_at=timezone.now(),
            history=[{"at": "x", "what": "fired"}],
        )
    page = alice_client.get("/alerts/").content.decode()
    assert "alice~alice-job" in page and "bob~bob-job" not in page and "data-alert-rules" not in page
