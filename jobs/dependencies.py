"""The jobs a submitted job waits for (`extras.dependencies`): named in its config, resolved here
to jobs the submitter may see, stored as JobDependency rows with the job (it starts `held`).
The scheduler's dependency pass (scheduling.dependencies) lets it go or ends it."""

from __future__ import annotations

from typing import Any

from accounts.permissions import is_admin
from jobs.models import Job, JobDependency
from jobs.protocol.dependencies import Reference, references
from jobs.protocol.spec import NormalizedSpec


def resolve(user: Any, spec: NormalizedSpec) -> tuple[list[tuple[str, Job]], list[tuple[str, str]]]:
    """((kind, job) for each dependency, field errors for those that name no job the user may see)."""
    found: list[tuple[str, Job]] = []
    errors: list[tuple[str, str]] = []
    for reference in references(spec):
        job = _find(user, reference)
        if job is None:
            errors.append((reference.field, _unknown(user, reference)))
        else:
            found.append((reference.kind, job))
    return found, errors


def _find(user: Any, reference: Reference) -> Job | None:
    jobs = Job.objects.select_related("owner")
    if not is_admin(user):
        jobs = jobs.filter(owner=user)
    name = str(reference.job)
    if isinstance(reference.job, int) or name.isdigit():
        return jobs.filter(pk=int(name)).first()
    owner, _, job_name = name.rpartition("~")
    return jobs.filter(owner__username=owner or user.get_username(), name=job_name).first()


def _unknown(user: Any, reference: Reference) -> str:
    name = str(reference.job)
    if isinstance(reference.job, int) or name.isdigit():
        return f"no job with id {name} that you may see"
    if "~" in name:
        return f'no job "{name}" that you may see'
    return f'you have no job named "{name}"'


def record(job: Job, found: list[tuple[str, Job]]) -> None:
    """The rows of a job just saved (inside its submit's transaction)."""
    JobDependency.objects.bulk_create(
        [JobDependency(job=job, depends_on=other, kind=kind) for kind, other in found], ignore_conflicts=True
    )
