"""Signed, expiring links for clients that fetch with a plain GET and no token: task logs
(OpenPAI's containerLog / log locations) and the v1 SSH private key download."""

from __future__ import annotations

import hashlib
from typing import Any

from django.conf import settings
from django.core import signing
from django.urls import reverse

from jobs.models import Job, Task, TaskAttempt

LOG_SALT = "pai.api.task-log"
SSH_KEY_SALT = "pai.api.ssh-private-key"
LOG_LINK_SECONDS = 24 * 3600


def _signer(salt: str) -> signing.TimestampSigner:
    return signing.TimestampSigner(salt=salt)


def key_fingerprint(job: Job) -> str:
    """Binds a key link to the key itself: a new key pair (or another job) voids the link."""
    return hashlib.sha256(job.ssh_private_key_encrypted.encode()).hexdigest()[:24]


def ssh_key_link_token(job: Job) -> str:
    return _signer(SSH_KEY_SALT).sign_object({"job": job.pk, "key": key_fingerprint(job)})


def job_for_ssh_key_link(token: str) -> Job | None:
    """The job whose key this link names, if the link is authentic, fresh and the key unchanged."""
    try:
        claim: Any = _signer(SSH_KEY_SALT).unsign_object(token, max_age=settings.PAI_API_SSH_KEY_LINK_SECONDS)
        job = Job.objects.get(pk=int(claim["job"]))
    except (signing.BadSignature, Job.DoesNotExist, KeyError, TypeError, ValueError):
        return None
    return job if job.ssh_private_key_encrypted and claim.get("key") == key_fingerprint(job) else None


def ssh_key_path(job: Job) -> str:
    return reverse("api-v1-ssh-key", kwargs={"token": ssh_key_link_token(job)})


def task_log_token(task: Task, tail: bool = False) -> str:
    return _signer(LOG_SALT).sign_object({"task": task.pk, "tail": tail})


def task_for_log_link(token: str) -> tuple[Task, bool] | None:
    try:
        claim: Any = _signer(LOG_SALT).unsign_object(token, max_age=LOG_LINK_SECONDS)
        task = Task.objects.get(pk=int(claim["task"]))
    except (signing.BadSignature, Task.DoesNotExist, KeyError, TypeError, ValueError):
        return None
    return task, bool(claim.get("tail"))


def task_log_path(task: Task, tail: bool = False) -> str:
    return reverse("api-task-log", kwargs={"token": task_log_token(task, tail)})


def attempt_log_path(attempt: TaskAttempt, tail: bool = False) -> str:
    """A link to an ended task attempt's own log (each attempt writes its own file)."""
    token = _signer(LOG_SALT).sign_object({"attempt": attempt.pk, "tail": tail})
    return reverse("api-task-log", kwargs={"token": token})


def attempt_for_log_link(token: str) -> tuple[TaskAttempt, bool] | None:
    try:
        claim: Any = _signer(LOG_SALT).unsign_object(token, max_age=LOG_LINK_SECONDS)
        attempt = TaskAttempt.objects.get(pk=int(claim["attempt"]))
    except (signing.BadSignature, TaskAttempt.DoesNotExist, KeyError, TypeError, ValueError):
        return None
    return attempt, bool(claim.get("tail"))
