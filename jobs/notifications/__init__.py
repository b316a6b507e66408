"""Telling owners what their jobs do: lifecycle calls `job_changed` once per change (the job ran,
was retried, ended), after the transition committed. It mails the owner where asked and hands the
change to the webhooks that want it (jobs/webhooks.py: an outbox, sent by another process).

Whether to mail: the job's own `extras.jobStatusChangeNotification` ({running, retried, succeeded,
failed, stopped}, OpenPAI's v2 field) when it has one, else the owner's profile preference (which
speaks of endings only).
"""

from __future__ import annotations

import logging

from django.conf import settings
from django.core.mail import send_mail
from django.urls import reverse

from accounts.models import NotificationPreference
from jobs import webhooks
from jobs.models import Job, JobState

log = logging.getLogger("pai.notifications")

ENDINGS = {JobState.SUCCEEDED: "succeeded", JobState.FAILED: "failed", JobState.STOPPED: "stopped"}
WORDS = {"running": "is running", "retried": "is being retried"}  # the others: the state's name


def wants_email(job: Job, event: str) -> bool:
    if not job.owner.email:
        return False
    per_job = (job.normalized.get("extras") or {}).get("jobStatusChangeNotification")
    if isinstance(per_job, dict):
        return bool(per_job.get(event))
    if event not in ENDINGS.values():
        return False
    preference = NotificationPreference.objects.filter(user=job.owner).first()
    when = preference.email if preference else NotificationPreference.When.NEVER
    return when == NotificationPreference.When.ENDED or (
        when == NotificationPreference.When.FAILED and job.state == JobState.FAILED
    )


def job_ended(job_id: int) -> None:
    job_changed(job_id, None)


def jobs_ended(job_ids: list[int]) -> None:
    """job_ended for many jobs at once (a sweep's waiting runs stopped together): one query finds
    those whose owner may be told (an email address, or a webhook that wants the ending)."""
    try:
        rows = list(Job.objects.filter(pk__in=job_ids).values_list("pk", "owner_id", "owner__email", "state"))
    except Exception as exc:
        log.warning("could not read %d ended jobs to tell their owners: %s", len(job_ids), exc)
        return
    for job_id, owner_id, email, state in rows:
        event = ENDINGS.get(JobState(state))
        if event is not None and (email or webhooks.wanted(owner_id, event)):
            job_changed(job_id, event)


def job_changed(job_id: int, event: str | None) -> None:
    """Mail the owner if they asked, and queue the webhooks (`event` None: the ending the job's
    state says). Never raises: a mail server's (or the database's) trouble must not fail the pass."""
    try:
        row = Job.objects.filter(pk=job_id).values("owner_id", "owner__email", "state").first()
        event = event or (ENDINGS.get(JobState(row["state"])) if row else None)
        if row is None or event is None:
            return
        hooked = webhooks.wanted(row["owner_id"], event)
        if not hooked and not row["owner__email"]:
            return  # (nothing to load: this runs for every job's every change)
        job = Job.objects.select_related("owner", "virtual_cluster").get(pk=job_id)
        if hooked:
            webhooks.enqueue(job, event)
    except Exception as exc:
        log.warning("could not queue the webhooks of job %s: %s", job_id, exc)
        return
    if not wants_email(job, event):
        return
    try:
        send_mail(_subject(job, event), _body(job, event), None, [job.owner.email])
    except Exception as exc:
        log.warning("could not mail %s about job %s: %s", job.owner.email, job.full_name, exc)


def _subject(job: Job, event: str) -> str:
    return f"[PAI] Job {job.full_name} {WORDS.get(event, event)}"


def _body(job: Job, event: str) -> str:
    lines = [f"Your job {job.full_name} {WORDS.get(event, event)}."]
    if job.exit_code and event in ENDINGS.values():
        lines.append(f"Exit code {job.exit_code}: {job.exit_diagnostics}")
    lines.append(f"{settings.PAI_PUBLIC_URL.rstrip('/')}{reverse('jobs:detail', args=[job.full_name])}")
    return "\n\n".join(lines) + "\n"
