"""Alert rules with real tasks and samples: an idle-GPU rule notifies the owner (an email and a
webhook to a real HTTP server), tags the job, then stops it after the grace; a node-down rule
fires, cordons, and clears; the alerts page and OpenPAI's `GET /api/v2/alerts` list them."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.core import mail
from django.test import Client
from django.utils import timezone

from catalogue import Message
from clusters.models import Gpu, GpuType, Node
from jobs import lifecycle, outbox, webhooks
from jobs.models import Job, JobState, TaskSample
from scheduling.alerts import RuleError, evaluate_rules, save_rule
from scheduling.models import Alert, AlertRule
from tests.factories import create_job
from tests.scheduler.conftest import role, v2_job

pytestmark = pytest.mark.django_db


@pytest.fixture
def gpu_node(process_node):
    kind = GpuType.objects.create(name="V100")
    for index in range(2):
        Gpu.objects.create(node=process_node, index=index, gpu_type=kind)
    return process_node


@pytest.fixture
def idle_job(gpu_node, user, submit, run_until):
    """A real task holding a GPU, running, whose samples say its GPU idled for the last hour."""
    user.email = "alice@example.org"
    user.save()
    job = run_until(submit(v2_job("idle", role("w", "sleep 60", gpu=1))), JobState.RUNNING)
    hour_ago = timezone.now() - timedelta(minutes=61)
    Job.objects.filter(pk=job.pk).update(launched_at=hour_ago)
    task = job.tasks.get()
    TaskSample.objects.bulk_create(
        TaskSample(
            task=task,
            at=int(hour_ago.timestamp()) + 60 * m,
            period=60,
            cpu_milli=10,
            memory_mb=5,
            gpus=[[task.gpus[0], 2, 100]],
        )
        for m in range(61)
    )
    return job


def test_an_idle_gpu_rule_warns_the_owner_then_stops_the_job_after_the_grace(idle_job, receiver, run_until):
    webhooks.create_hook(idle_job.owner, receiver.url, ["alert"])
    AlertRule.objects.create(
        name="idle-gpus",
        condition="gpu_idle",
        minutes=60,
        percent=5,
        actions=["notify_owner", "tag_job", "stop_job"],
        grace_minutes=30,
    )

    evaluate_rules()
    alert = Alert.objects.get()
    assert alert.subject == "job alice~idle" and "averaged 2 %" in alert.summary
    assert mail.outbox == [] and receiver.posts == []  # sent by the outbox's sender, not here
    outbox.deliver_due()
    (message,) = mail.outbox
    assert message.to == ["alice@example.org"] and "It will be stopped at" in message.body
    assert receiver.events() == ["alert"]
    assert list(Job.objects.get(pk=idle_job.pk).tags.values_list("name", flat=True)) == ["idle-gpus"]

    evaluate_rules()  # within the grace: nothing more
    outbox.deliver_due()
    assert Job.objects.get(pk=idle_job.pk).execution_type == "START" and len(mail.outbox) == 1
    evaluate_rules(timezone.now() + timedelta(minutes=31))
    job = run_until(idle_job, JobState.STOPPED)
    assert job.exit_diagnostics.endswith("stopped because alert rule idle-gpus fired.")
    history = Alert.objects.get().history
    assert [entry["what"] for entry in history] == ["fired", "notified alice", "tagged idle-gpus", "stopped the job"]
    assert [entry["message"]["code"] for entry in history] == [
        "alert.fired",
        "alert.notified",
        "alert.tagged",
        "alert.stopped",
    ]


def test_a_busy_gpu_fires_nothing(idle_job):
    TaskSample.objects.filter(task__job=idle_job).update(gpus=[[0, 90, 100]])
    AlertRule.objects.create(name="idle-gpus", condition="gpu_idle", minutes=60, percent=5, actions=["notify_owner"])
    evaluate_rules()
    assert not Alert.objects.exists() and mail.outbox == []


def test_a_node_down_rule_fires_cordons_and_clears(gpu_node, admin_user):
    admin_user.email = "root@example.org"
    admin_user.save()
    AlertRule.objects.create(
        name="node-down", condition="node_down", minutes=5, actions=["notify_admins", "cordon_node"]
    )
    Node.objects.filter(pk=gpu_node.pk).update(
        down_since=timezone.now() - timedelta(minutes=6), down_reason="timed out"
    )
    evaluate_rules()
    outbox.deliver_due()
    alert = Alert.objects.get()
    assert alert.resolved_at is None and alert.subject == f"node {gpu_node.name}"
    assert [m.to for m in mail.outbox] == [["root@example.org"]]
    assert Node.objects.get(pk=gpu_node.pk).schedulable is False
    Node.objects.filter(pk=gpu_node.pk).update(down_since=None)
    evaluate_rules()
    alert.refresh_from_db()
    assert alert.resolved_at is not None and alert.history[-1]["what"] == "cleared"
    assert [entry["message"]["code"] for entry in alert.history] == [
        "alert.fired",
        "alert.notified_admins",
        "alert.cordoned",
        "alert.cleared",
    ]


def test_the_api_lists_alerts_as_alertmanager_does_to_whom_they_concern(gpu_node, user, admin_user):
    rule = AlertRule.objects.create(name="node-down", condition="node_down", minutes=5, actions=[])
    Node.objects.filter(pk=gpu_node.pk).update(down_since=timezone.now() - timedelta(minutes=6))
    evaluate_rules()
    admin = Client()
    admin.force_login(admin_user)
    (shown,) = admin.get("/api/v2/alerts").json()
    assert shown["labels"]["alertname"] == rule.name and shown["status"]["state"] == "active"
    assert shown["labels"]["node_name"] == gpu_node.name and shown["annotations"]["summary"].startswith("node ")
    alice = Client()
    alice.force_login(user)
    assert alice.get("/api/v2/alerts").json() == []  # a node's alert is the admins'


def test_the_api_refuses_a_bad_rule_naming_each_field_by_its_code(admin_user):
    admin = Client()
    admin.force_login(admin_user)
    answer = admin.post(
        "/api/v2/alert-rules", {"name": "", "condition": "hot", "minutes": 0}, content_type="application/json"
    )
    body = answer.json()
    assert answer.status_code == 400 and body["code"] == "InvalidParametersError"
    assert [(error["field"], error["code"]) for error in body["errors"]] == [
        ("name", "alert.rule.name"),
        ("condition", "alert.rule.choice"),
        ("minutes", "alert.rule.number"),
    ]
    assert body["message"].startswith("name: must be a name of 1 to 100 characters; condition: must be one of")


def test_a_rules_name_taken_and_its_actions_are_said_by_their_codes(admin_user):
    AlertRule.objects.create(name="down", condition="node_down")
    with pytest.raises(RuleError) as refused:
        save_rule("down", "node_down", 5, 5, ["page_me"], 30)
    assert [(field, message.code) for field, message in refused.value.errors] == [
        ("name", "alert.rule.name_taken"),
        ("actions", "alert.rule.actions"),
    ]


def test_an_alert_whose_job_ended_before_its_stop_says_so(user, default_vc, monkeypatch):
    def ended(job, rule):
        raise lifecycle.JobStateError(Message.of("job_state.already_finished", job=job.full_name, state="SUCCEEDED"))

    monkeypatch.setattr(lifecycle, "request_alert_stop", ended)  # (it ended between the finding and the stop)
    launched = timezone.now() - timedelta(minutes=5)
    job = create_job(user, "ended", state="RUNNING", launched_at=launched)
    rule = AlertRule.objects.create(name="long", condition="job_too_long", minutes=1, actions=["stop_job"])
    alert = Alert.objects.create(
        rule=rule, subject=f"job {job.full_name}", job=job, summary="s", fired_at=launched, stop_at=launched
    )
    evaluate_rules()
    alert.refresh_from_db()
    assert alert.history[-1]["message"]["code"] == "alert.job_ended" and alert.stop_at is None
