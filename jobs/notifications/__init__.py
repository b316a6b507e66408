"""Telling owners that their jobs ended: one email per ending (lifecycle calls job_ended once, after
the transition that ended the job committed), and the list the browser notifier polls.

Whether to mail: the job's own `extras.jobStatusChangeNotification` ({succeeded, failed, stopped},
OpenPAI's v2 field) when it has one, else the owner's profile preference.
"""

from __future__ import annotations

import logging

from django.conf import settings
from django.core.mail import send_mail
from django.urls import reverse

from accounts.models import NotificationPreference
from jobs.models import Job, JobState

log = logging.getLogger("pai.notifications")

ENDINGS = {JobState.SUCCEEDED: "succeeded", JobState.FAILED: "failed", JobState.STOPPED: "stopped"}


def wants_email(job: Job) -> bool:
    ending = ENDINGS.get(JobState(job.state))
    if ending is None or not job.owner.email:
        return False
    per_job = (job.normalized.get("extras") or {}).get("jobStatusChangeNotification")
    if isinstance(per_job, dict):
        return bool(per_job.get(ending))
    preference = NotificationPreference.objects.filter(user=job.owner).first()
    when = preference.email if preference else NotificationPreference.When.NEVER
    return when == NotificationPreference.When.ENDED or (
        when == NotificationPreference.When.FAILED and job.state == JobState.FAILED
    )


def job_ended(job_id: int) -> None:
    """Mail the owner if they asked. Never raises: a mail server's trouble must not fail the pass."""
    if not Job.objects.filter(pk=job_id).exclude(owner__email="").exists():
        return  # no address to mail (the job and its config are not loaded: this runs for every job)
    job = Job.objects.select_related("owner").get(pk=job_id)
    if not wants_email(job):
        return
    try:
        send_mail(_subject(job), _body(job), None, [job.owner.email])
    except Exception as exc:
        log.warning("could not mail %s about job %s: %s", job.owner.email, job.full_name, exc)


def _subject(job: Job) -> str:
    return f"[PAI] Job {job.full_name} {ENDINGS[JobState(job.state)]}"


def _body(job: Job) -> str:
    lines = [f"Your job {job.full_name} {ENDINGS[JobState(job.state)]}."]
    if job.exit_code:
        lines.append(f"Exit code {job.exit_code}: {job.exit_diagnostics}")
    lines.append(f"{settings.PAI_PUBLIC_URL.rstrip('/')}{reverse('jobs:detail', args=[job.full_name])}")
    return "\n\n".join(lines) + "\n"
