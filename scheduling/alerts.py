"""Alert rules with actions, evaluated by the sampler each period (OpenPAI's alert manager had
them: idle GPUs, nodes down, jobs running too long, queues waiting too long; actions notify the
owner or the admins, tag the job, stop it after a warning and a grace, cordon the node).

A rule's condition names its subjects now (jobs, nodes or VCs); a subject without an open alert
fires one (its actions run once, each written into the alert's history), one with an open alert
keeps it (and a pending stop is carried out once its grace is over), and an open alert whose
subject no longer matches clears. Notifications go by email and to the webhooks that asked for
`alert` (jobs.webhooks): the owner's for a job's alert, the deployment's for the admins'; both
through the outbox (jobs/outbox.py), written with the alert in one transaction.
"""

from __future__ import annotations

import logging
from collections import defaultdict
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.exceptions import ValidationError
from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from catalogue import Message
from clusters.models import Node
from jobs import lifecycle, outbox, webhooks
from jobs.lifecycle import JobStateError
from jobs.models import Job, JobState, JobTag, TaskSample
from scheduling.models import Alert, AlertRule

log = logging.getLogger("pai.alerts")

ACTIONS = ("notify_owner", "notify_admins", "tag_job", "stop_job", "cordon_node")
JOB_ACTIONS = ("notify_owner", "tag_job", "stop_job")


@dataclass(frozen=True)
class Finding:
    subject: str
    summary: str
    job: Job | None = None
    node: Node | None = None


def evaluate_rules(now: datetime | None = None) -> None:
    now = now or timezone.now()
    for rule in AlertRule.objects.all():
        try:
            findings = {f.subject: f for f in FINDERS[rule.condition](rule, now)}
            _reconcile(rule, findings, now)
        except Exception:
            log.exception("alert rule %s failed; trying again next period", rule.name)


# ---- conditions -----------------------------------------------------------------------------------
def _gpu_idle(rule: AlertRule, now: datetime) -> list[Finding]:
    """Running jobs with GPUs whose sampled utilisation over the last `minutes` averaged under
    `percent`, sampled since the window began (no samples: no verdict)."""
    cutoff = now - timedelta(minutes=rule.minutes)
    jobs = {
        job.pk: job
        for job in Job.objects.filter(state=JobState.RUNNING, gpu_count__gt=0, launched_at__lte=cutoff).select_related(
            "owner"
        )
    }
    utilisation: dict[int, list[float]] = defaultdict(list)
    first: dict[int, int] = {}
    start = int(cutoff.timestamp())
    samples = TaskSample.objects.filter(task__job_id__in=list(jobs), at__gte=start, gpus__isnull=False)
    for job_id, at, gpus in samples.values_list("task__job_id", "at", "gpus"):
        utilisation[job_id] += [float(g[1] or 0) for g in gpus or []]
        first[job_id] = min(at, first.get(job_id, at))
    slack = max(60, 2 * settings.PAI_SAMPLE_SECONDS)
    found = []
    for job_id, values in utilisation.items():
        average = sum(values) / len(values) if values else 100.0
        if values and first[job_id] <= start + slack and average < rule.percent:
            job = jobs[job_id]
            found.append(
                Finding(
                    f"job {job.full_name}",
                    f"job {job.full_name}: its GPUs averaged {average:.0f} % over the last {rule.minutes} minutes"
                    f" (under {rule.percent} %)",
                    job=job,
                )
            )
    return found


def _node_down(rule: AlertRule, now: datetime) -> list[Finding]:
    cutoff = now - timedelta(minutes=rule.minutes)
    return [
        Finding(
            f"node {node.name}",
            f"node {node.name} has been down since {node.down_since:%Y-%m-%d %H:%M} UTC: "
            f"{node.down_reason or 'no answer'}",
            node=node,
        )
        for node in Node.objects.filter(down_since__lte=cutoff)
    ]


def _job_too_long(rule: AlertRule, now: datetime) -> list[Finding]:
    cutoff = now - timedelta(minutes=rule.minutes)
    return [
        Finding(
            f"job {job.full_name}",
            f"job {job.full_name} has been running for more than {rule.minutes} minutes",
            job=job,
        )
        for job in Job.objects.filter(state=JobState.RUNNING, launched_at__lte=cutoff).select_related("owner")
    ]


def _queue_too_long(rule: AlertRule, now: datetime) -> list[Finding]:
    cutoff = now - timedelta(minutes=rule.minutes)
    waiting: dict[str, int] = defaultdict(int)
    for vc in Job.objects.filter(state=JobState.WAITING, held=False, created_at__lte=cutoff).values_list(
        "virtual_cluster__name", flat=True
    ):
        waiting[vc] += 1
    return [
        Finding(f"vc {vc}", f"VC {vc}: {count} jobs have waited more than {rule.minutes} minutes")
        for vc, count in sorted(waiting.items())
    ]


FINDERS: dict[str, Any] = {
    AlertRule.Condition.GPU_IDLE: _gpu_idle,
    AlertRule.Condition.NODE_DOWN: _node_down,
    AlertRule.Condition.JOB_TOO_LONG: _job_too_long,
    AlertRule.Condition.QUEUE_TOO_LONG: _queue_too_long,
}


# ---- firing, carrying on, clearing ----------------------------------------------------------------
def _reconcile(rule: AlertRule, findings: dict[str, Finding], now: datetime) -> None:
    open_alerts = {
        a.subject: a for a in Alert.objects.filter(rule=rule, resolved_at__isnull=True).select_related("job")
    }
    for subject, alert in open_alerts.items():
        if subject not in findings:
            _note(alert, now, Message.of("alert.cleared"))
            Alert.objects.filter(pk=alert.pk).update(resolved_at=now, history=alert.history)
        elif alert.stop_at and now >= alert.stop_at:
            _stop(rule, alert, now)
    for subject, finding in findings.items():
        if subject not in open_alerts:
            _fire(rule, finding, now)


@transaction.atomic
def _fire(rule: AlertRule, finding: Finding, now: datetime) -> None:
    alert = Alert(
        rule=rule, subject=finding.subject, job=finding.job, node=finding.node, summary=finding.summary, fired_at=now
    )
    _note(alert, now, Message.of("alert.fired"))
    job, actions = finding.job, set(rule.actions)
    if job is not None and "stop_job" in actions and job.execution_type == Job.ExecutionType.START:
        alert.stop_at = now + timedelta(minutes=rule.grace_minutes)
    text, subject = _message(rule, alert), f"[PAI] Alert {rule.name}: {finding.subject}"
    if job is not None and "notify_owner" in actions:
        outbox.mail(job.owner, subject, text, event="alert", job=job)
        webhooks.enqueue_alert(job.owner_id, job, text)
        _note(alert, now, Message.of("alert.notified", user=job.owner.get_username()))
    if "notify_admins" in actions:
        admins = get_user_model().objects.filter(Q(is_superuser=True) | Q(is_staff=True), is_active=True)
        for admin in admins:
            outbox.mail(admin, subject, text, event="alert", job=job)
        webhooks.enqueue_alert(None, job, text)
        _note(alert, now, Message.of("alert.notified_admins"))
    if job is not None and "tag_job" in actions:
        JobTag.objects.get_or_create(job=job, name=rule.name)
        _note(alert, now, Message.of("alert.tagged", tag=rule.name))
    if finding.node is not None and "cordon_node" in actions:
        Node.objects.filter(pk=finding.node.pk).update(schedulable=False)
        _note(alert, now, Message.of("alert.cordoned", node=finding.node.name))
    alert.save()
    log.info("alert %s fired: %s", rule.name, finding.summary)


def _stop(rule: AlertRule, alert: Alert, now: datetime) -> None:
    job = alert.job
    if job is not None:
        try:
            lifecycle.request_alert_stop(job, rule.name)
            _note(alert, now, Message.of("alert.stopped"))
        except JobStateError:
            _note(alert, now, Message.of("alert.job_ended"))
    Alert.objects.filter(pk=alert.pk).update(stop_at=None, history=alert.history)


def _message(rule: AlertRule, alert: Alert) -> str:
    lines = [f"{alert.summary}."]
    if alert.stop_at:
        lines.append(f"It will be stopped at {alert.stop_at:%Y-%m-%d %H:%M} UTC unless this clears before.")
    if alert.job is not None:
        lines.append(alert.job.public_url())
    lines.append(f"(Alert rule {rule.name})")
    return "\n\n".join(lines) + "\n"


def _note(alert: Alert, now: datetime, what: Message) -> None:
    """One step of the alert's history: `what` in English (as the API answered it before its code)
    and as its message."""
    alert.history = [*alert.history, {"at": now.isoformat(), "what": what.text, "message": what.as_dict()}]


def alert_shape(alert: Alert) -> dict[str, Any]:
    """An alert as Prometheus Alertmanager's API (and so OpenPAI's `GET /api/v2/alerts`) shapes one."""
    labels = {"alertname": alert.rule.name, "condition": alert.rule.condition}
    if alert.job is not None:
        labels.update(job_name=alert.job.full_name, username=alert.job.owner.get_username())
    if alert.node is not None:
        labels["node_name"] = alert.node.name
    return {
        "labels": labels,
        "annotations": {"summary": alert.summary},
        "startsAt": alert.fired_at.isoformat(),
        "endsAt": alert.resolved_at.isoformat() if alert.resolved_at else None,
        "status": {"state": "resolved" if alert.resolved_at else "active"},
        "history": alert.history,
    }


def visible_alerts(user: Any, admin: bool) -> Any:
    alerts = Alert.objects.select_related("rule", "job", "job__owner", "node")
    return alerts if admin else alerts.filter(job__owner=user)


class RuleError(ValidationError):
    """A rule's bad fields: `errors`, (field, Message) pairs; its messages "field: why" in English."""

    def __init__(self, errors: list[tuple[str, Message]]) -> None:
        super().__init__([f"{field}: {message.text}" for field, message in errors])
        self.errors = errors

    def as_dicts(self) -> list[dict[str, Any]]:
        """[{field, message, code, params}], as a config error's (the API answers them)."""
        return [{"field": field, **message.as_dict()} for field, message in self.errors]


def save_rule(name: Any, condition: Any, minutes: Any, percent: Any, actions: Any, grace_minutes: Any) -> AlertRule:
    """A new rule, each field checked; raises RuleError naming each bad field and why."""
    errors: list[tuple[str, Message]] = []
    if not isinstance(name, str) or not name.strip() or len(name) > 100:
        errors.append(("name", Message.of("alert.rule.name")))
    elif AlertRule.objects.filter(name=name.strip()).exists():
        errors.append(("name", Message.of("alert.rule.name_taken", name=name.strip())))
    if condition not in AlertRule.Condition.values:
        errors.append(("condition", Message.of("alert.rule.choice", choices=", ".join(AlertRule.Condition.values))))
    numbers = {"minutes": (minutes, 1, 525600), "percent": (percent, 0, 100), "graceMinutes": (grace_minutes, 0, 10080)}
    for field, (value, low, high) in numbers.items():
        if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
            errors.append((field, Message.of("alert.rule.number", low=low, high=high)))
    if not isinstance(actions, list) or any(action not in ACTIONS for action in actions):
        errors.append(("actions", Message.of("alert.rule.actions", choices=", ".join(ACTIONS))))
    if errors:
        raise RuleError(errors)
    return AlertRule.objects.create(
        name=name.strip(),
        condition=condition,
        minutes=minutes,
        percent=percent,
        actions=list(dict.fromkeys(actions)),
        grace_minutes=grace_minutes,
    )
