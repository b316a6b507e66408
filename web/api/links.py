"""Signed, expiring links for clients that fetch with a plain GET and no token: task logs
(OpenPAI's containerLog / log locations) and the v1 SSH private key download."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Any

from django.conf import settings
from django.core import signing
from django.urls import reverse

from clusters.executors.logcap import ALL
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


def log_link(run: Task | TaskAttempt, tail: bool = False, stream: str = ALL) -> str:
    """A link to one stream (`all`, `stdout`, `stderr`) of the log of a task's attempt now (a Task)
    or of an ended attempt (a TaskAttempt: each attempt writes its own files)."""
    claim = {"task" if isinstance(run, Task) else "attempt": run.pk, "tail": tail, "stream": stream}
    return reverse("api-task-log", kwargs={"token": _signer(LOG_SALT).sign_object(claim)})


@dataclass(frozen=True)
class LogLink:
    run: Task | TaskAttempt
    tail: bool
    stream: str


def log_for_link(token: str) -> LogLink | None:
    """The log a link names, if the link is authentic and fresh."""
    try:
        claim: Any = _signer(LOG_SALT).unsign_object(token, max_age=LOG_LINK_SECONDS)
        run: Task | TaskAttempt = (
            Task.objects.get(pk=int(claim["task"]))
            if "task" in claim
            else TaskAttempt.objects.get(pk=int(claim["attempt"]))
        )
    except (signing.BadSignature, Task.DoesNotExist, TaskAttempt.DoesNotExist, KeyError, TypeError, ValueError):
        return None
    return LogLink(run, bool(claim.get("tail")), str(claim.get("stream") or ALL))
