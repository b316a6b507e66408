"""The jobs a submitted job waits for (`extras.dependencies`): named in its config, resolved here
to jobs the submitter may see, stored as JobDependency rows with the job (it starts `held`).
The scheduler's dependency pass (scheduling.dependencies) lets it go or ends it."""

from __future__ import annotations

from typing import Any

from accounts.permissions import is_admin
from catalogue import Message
from jobs.models import Job, JobDependency
from jobs.protocol.dependencies import Reference, references
from jobs.protocol.errors import FieldError
from jobs.protocol.spec import NormalizedSpec


def resolve(user: Any, spec: NormalizedSpec) -> tuple[list[tuple[str, Job]], list[FieldError]]:
    """((kind, job) for each dependency, field errors for those that name no job the user may see)."""
    found: list[tuple[str, Job]] = []
    errors: list[FieldError] = []
    for reference in references(spec):
        jobs = _find(user, reference)
        if not jobs:
            errors.append((reference.field, _unknown(reference)))
        found += [(reference.kind, job) for job in jobs]
    return found, errors


def _find(user: Any, reference: Reference) -> list[Job]:
    """The job named, or every run of the sweep named (a sweep is waited for as a whole)."""
    jobs = Job.objects.select_related("owner")
    if not is_admin(user):
        jobs = jobs.filter(owner=user)
    name = str(reference.job)
    if isinstance(reference.job, int) or name.isdigit():
        return list(jobs.filter(pk=int(name))[:1])
    owner, _, job_name = name.rpartition("~")
    owner = owner or user.get_username()
    return list(jobs.filter(owner__username=owner, name=job_name)[:1]) or list(
        jobs.filter(sweep__owner__username=owner, sweep__name=job_name)
    )


def _unknown(reference: Reference) -> Message:
    name = str(reference.job)
    if isinstance(reference.job, int) or name.isdigit():
        return Message.of("config.dependency.no_job_id", id=name)
    if "~" in name:
        return Message.of("config.dependency.no_job", name=name)
    return Message.of("config.dependency.no_own_job", name=name)


def record(job: Job, found: list[tuple[str, Job]]) -> None:
    """The rows of a job just saved (inside its submit's transaction)."""
    JobDependency.objects.bulk_create(
        [JobDependency(job=job, depends_on=other, kind=kind) for kind, other in found], ignore_conflicts=True
    )
