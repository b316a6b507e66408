"""Telling owners what their jobs do: lifecycle calls `job_changed` once per change (the job ran,
was preempted, was retried, ended), inside the transaction of that change. It writes what the
change makes the portal send into the outbox (jobs/outbox.py, sent by another process): the
owner's mail where asked, and a POST for each webhook that wants it. Nothing is sent here.

Whether to mail: the job's own `extras.jobStatusChangeNotification` ({running, preempted, retried,
succeeded, failed, stopped}: OpenPAI's v2 field, and the portal's `preempted`) when it has one,
else the owner's profile preference (which speaks of endings only).
"""

from __future__ import annotations

import logging

from django.db import transaction

from accounts.models import NotificationPreference
from catalogue import Message
from jobs import outbox, webhooks
from jobs.models import Job, JobState
from queries.prepared import ListOf, Prepared

log = logging.getLogger("pai.notifications")

ENDINGS = {JobState.SUCCEEDED: "succeeded", JobState.FAILED: "failed", JobState.STOPPED: "stopped"}

# Whose jobs they are, read on every change of every job (compiled once: queries.prepared).
_OWNERS_OF: Prepared[tuple[int, int, str, str]] = Prepared(
    lambda job_ids: Job.objects.filter(pk__in=job_ids).values_list("pk", "owner_id", "owner__email", "state"),
    ListOf(int),
)


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
    those whose owner may be told (an email address, or a webhook that wants the ending). Inside
    the change's transaction, as job_changed."""
    for job_id, owner_id, email, state in _OWNERS_OF(job_ids):
        event = ENDINGS.get(JobState(state))
        if event is not None and (email or webhooks.wanted(owner_id, event)):
            job_changed(job_id, event)


def job_changed(job_id: int, event: str | None, detail: Message | None = None) -> None:
    """The owner's mail if they asked, and the webhooks', into the outbox (`event` None: the ending
    the job's state says; `detail`: a sentence the notices add, e.g. who preempted the job). Call
    it inside the transaction of the change: a rollback takes its notices too. Never raises (a
    notice that cannot be written is logged; the change goes on)."""
    row = _OWNERS_OF.first([job_id])
    event = event or (ENDINGS.get(JobState(row[3])) if row else None)
    if row is None or event is None:
        return
    _, owner_id, email, _ = row
    hooked = webhooks.wanted(owner_id, event)
    if not hooked and not email:
        return  # (nothing to load: this runs for every job's every change)
    try:
        with transaction.atomic():  # (a savepoint: notices that cannot be written never undo the change)
            _write(Job.objects.select_related("owner", "virtual_cluster").get(pk=job_id), event, detail, hooked)
    except Exception:
        log.exception("could not write the notices of job %s (%s)", job_id, event)


def _write(job: Job, event: str, detail: Message | None, hooked: bool) -> None:
    if hooked:
        webhooks.enqueue(job, event, detail)
    if wants_email(job, event):
        said = f"Job {job.full_name} {webhooks.EVENT_WORDS.get(event, event)}"
        url = job.public_url()
        line = f"{said}: {url}"  # (in a digest)
        outbox.mail(job.owner, f"[PAI] {said}", _body(job, event, detail, url), event=event, job=job, line=line)


def _body(job: Job, event: str, detail: Message | None, url: str) -> str:
    lines = [f"Your job {job.full_name} {webhooks.EVENT_WORDS.get(event, event)}."]
    if detail is not None:
        lines.append(detail.text)
    if job.exit_code and event in ENDINGS.values():
        lines.append(f"Exit code {job.exit_code}: {job.exit_diagnostics}")
    lines.append(url)
    return "\n\n".join(lines) + "\n"
