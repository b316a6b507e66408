"""The verbs on jobs. Pages, the API and the management commands all call these; each verb is one
transaction. Nothing else writes Job rows, except the scheduler loop recording what happened."""

from __future__ import annotations

import json
from typing import Any

from django.contrib.auth.models import AbstractBaseUser, AnonymousUser
from django.db import IntegrityError, transaction
from django.db.models import QuerySet
from django.utils import timezone

from accounts.permissions import is_admin
from clusters.models import GpuType, VirtualCluster
from jobs import storage
from jobs.crypto import encrypt_text
from jobs.models import FINISHED_JOB_STATES, Job, JobEvent, JobState, Task, TaskState
from jobs.protocol import JobConfigError, LoadedConfig, load, mask_config_text

User = AbstractBaseUser | AnonymousUser


class JobNameConflict(Exception):
    """The user already has a job with this name (API: 409 ConflictJobError)."""


class UnknownVirtualCluster(JobConfigError):
    """The config names a VC that does not exist (API: 404 NoVirtualClusterError)."""


class VirtualClusterForbidden(JobConfigError):
    """The user may not submit to this VC (API: 403 ForbiddenUserError)."""


class JobStateError(Exception):
    """The verb does not apply to the job in its current state (e.g. stop a finished job)."""


def _vc_field(cfg: LoadedConfig) -> str:
    return "virtualCluster" if cfg.protocol_version == 1 else "defaults.virtualCluster"


def _gpu_type_field(cfg: LoadedConfig) -> str:
    return "gpuType" if cfg.protocol_version == 1 else "extras.gpuType"


def validate_for_user(user: Any, text: str) -> tuple[LoadedConfig, VirtualCluster]:
    """The protocol's checks plus those that need the database; raises JobConfigError."""
    cfg = load(text)
    vc_name = cfg.spec["defaults"]["virtualCluster"]
    vc = VirtualCluster.objects.filter(name=vc_name).first()
    if vc is None:
        raise UnknownVirtualCluster([(_vc_field(cfg), f'virtual cluster "{vc_name}" does not exist')])
    if not vc.is_open_to(user):
        raise VirtualClusterForbidden([(_vc_field(cfg), f'you may not submit to virtual cluster "{vc_name}"')])
    errors: list[tuple[str, str]] = []
    gpu_type = (cfg.spec.get("extras") or {}).get("gpuType")
    if gpu_type and not GpuType.objects.filter(name=gpu_type).exists():
        known = ", ".join(GpuType.objects.values_list("name", flat=True)) or "none"
        errors.append((_gpu_type_field(cfg), f'GPU type "{gpu_type}" does not exist (known: {known})'))
    errors.extend(storage.validate_job_paths(user.get_username(), cfg.spec))
    if errors:
        raise JobConfigError(errors)
    return cfg, vc


def submit_job(user: Any, text: str) -> Job:
    """Validate the config and create the job and its tasks, WAITING, in one transaction."""
    cfg, vc = validate_for_user(user, text)
    spec = cfg.spec
    job = Job(
        owner=user,
        name=spec["name"],
        virtual_cluster=vc,
        protocol_version=cfg.protocol_version,
        # The values live only in secrets_encrypted: the stored text has them as ******.
        config_text=mask_config_text(text),
        spec=spec,
        secrets_encrypted=encrypt_text(json.dumps(cfg.secrets)) if cfg.secrets else "",
    )
    _attach_keypair(job)
    try:
        with transaction.atomic():
            job.save()
            Task.objects.bulk_create(
                Task(job=job, role=role, index=index)
                for role, role_spec in spec["taskRoles"].items()
                for index in range(role_spec["instances"])
            )
            JobEvent.objects.create(job=job, kind="submitted", message=f"Submitted to virtual cluster {vc.name}.")
    except IntegrityError as exc:
        raise JobNameConflict(f'job "{spec["name"]}" already exists for user {user.get_username()}') from exc
    return job


def _attach_keypair(job: Job) -> None:
    try:
        from jobs.ssh import attach_new_keypair
    except ImportError:  # the SSH room is optional until it lands
        return
    attach_new_keypair(job)


def stop_job(job: Job, by: Any) -> Job:
    """Ask the scheduler to stop every task; it records STOPPED when they are gone."""
    with transaction.atomic():
        updated = (
            Job.objects.filter(pk=job.pk)
            .exclude(state__in=FINISHED_JOB_STATES)
            .update(execution_type=Job.ExecutionType.STOP, updated_at=timezone.now())
        )
        if not updated:
            raise JobStateError(f"job {job.full_name} has already finished ({job.state})")
        JobEvent.objects.create(job=job, kind="stop-requested", message=f"Stop requested by {by.get_username()}.")
    job.refresh_from_db()
    return job


def restart_job(job: Job, by: Any) -> Job:
    """START on a finished job: it goes back to the queue as a new attempt."""
    with transaction.atomic():
        updated = Job.objects.filter(pk=job.pk, state__in=FINISHED_JOB_STATES).update(
            state=JobState.WAITING,
            execution_type=Job.ExecutionType.START,
            retries_used=0,
            transient_retries=0,
            pending_reason="",
            exit_code=None,
            user_exit_code=None,
            exit_diagnostics="",
            completed_at=None,
            updated_at=timezone.now(),
        )
        if not updated:
            raise JobStateError(f"job {job.full_name} is still {job.state}; only a finished job can be started again")
        job.tasks.update(
            state=TaskState.WAITING,
            attempt=0,
            retries=0,
            node=None,
            executor_id="",
            ip="",
            ports={},
            gpus=[],
            exit_code=None,
            user_exit_code=None,
            exit_diagnostics="",
            started_at=None,
            finished_at=None,
        )
        JobEvent.objects.create(job=job, kind="restarted", message=f"Started again by {by.get_username()}.")
    job.refresh_from_db()
    return job


def visible_jobs(user: Any) -> QuerySet[Job]:
    """The jobs a user may see: their own; admins see everyone's."""
    jobs = Job.objects.select_related("owner", "virtual_cluster")
    if is_admin(user):
        return jobs
    return jobs.filter(owner=user)


def split_full_name(full_name: str) -> tuple[str, str]:
    """`<owner>~<name>`: user names never hold `~`, so split at the first one."""
    owner, sep, name = full_name.partition("~")
    if not sep or not owner or not name:
        raise Job.DoesNotExist(f"{full_name!r} is not a job name of the form <user>~<job>")
    return owner, name


def get_job_for(user: Any, full_name: str) -> Job:
    """The job, if the user may see it; Job.DoesNotExist otherwise (answer 404, never 403)."""
    owner, name = split_full_name(full_name)
    return visible_jobs(user).get(owner__username=owner, name=name)
