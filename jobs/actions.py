"""The verbs on jobs. Pages, the API and the management commands all call these; each verb is one
transaction. State changes go through jobs.lifecycle, as the scheduler loop's do."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from django.conf import settings
from django.contrib.auth.models import AbstractBaseUser, AnonymousUser
from django.db import IntegrityError, transaction
from django.db.models import QuerySet

from accounts.permissions import is_admin
from catalogue import Message
from clusters.models import GpuType, Node, VirtualCluster, vc_access
from jobs import dependencies, lifecycle
from jobs.crypto import encrypt_text
from jobs.interactive import new_apps
from jobs.lifecycle import JobStateError
from jobs.models import InteractiveApp, Job, JobTag, Task
from jobs.protocol import JobConfigError, LoadedConfig, timelimit
from jobs.protocol.errors import FieldError
from jobs.protocol.fields import name_field, vc_field
from jobs.protocol.honoured import infiniband_roles, unsupported
from jobs.protocol.images import image_reference_errors
from jobs.protocol.limits import shm_errors, spec_totals, task_count_errors
from jobs.protocol.priority import (
    PRIORITY_CLASSES,
    TOP_LEVEL_FIELD,
    class_errors,
    class_number,
    grace_errors,
    requested_class,
)
from jobs.protocol.spec import NormalizedSpec, gpu_type
from jobs.protocol.storages import storage_requests
from jobs.protocol.submission import Submission, read
from jobs.protocol.v1 import fixed_port_fields
from jobs.registries import RegistryJudge
from jobs.ssh import attach_new_keypair
from jobs.states import FINISHED_JOB_STATES
from jobs.storage import areas as storage
from jobs.storage.areas import job_paths
from jobs.storage.configs import validate_storage_requests
from jobs.wake import wake_scheduler
from queries.prepared import Prepared, PreparedInsert

User = AbstractBaseUser | AnonymousUser


class JobNameConflict(Exception):
    """The user already has a job with this name (API: 409 ConflictJobError); str() in English."""

    def __init__(self, message: Message, field: str = "name") -> None:
        super().__init__(message.text)
        self.message = message
        self.field = field  # the name's field in the config as written (v1: jobName)


class UnknownVirtualCluster(JobConfigError):
    """The config names a VC that does not exist (API: 404 NoVirtualClusterError)."""


class VirtualClusterForbidden(JobConfigError):
    """The user may not submit to this VC (API: 403 ForbiddenUserError)."""


def check_task_counts(cfg: LoadedConfig) -> None:
    """The configured cap on task roles and tasks per job (one submit must stay a short write)."""
    errors = task_count_errors(
        cfg.spec,
        cfg.protocol_version,
        max_roles=settings.PAI_MAX_TASK_ROLES,
        max_tasks=settings.PAI_MAX_TASKS_PER_JOB,
    )
    if errors:
        raise JobConfigError(errors)


def fixed_port_errors(spec: NormalizedSpec) -> list[FieldError]:
    """A v1 `beginAt` asks for fixed port numbers, which a Slurm VC cannot promise: Slurm picks the
    node, and a task gets the ports that are free there (PAI_CONTAINER_HOST_<label>_PORT_LIST)."""
    return [(field, Message.of("config.slurm_begin_at")) for field in fixed_port_fields(spec)]


def priority_errors(vc: VirtualCluster, cfg: LoadedConfig, *, may_use_crit: bool) -> list[FieldError]:
    """The class the config names, against what the VC's admin allows (its highest class, and
    who may use `crit`)."""
    return class_errors(
        requested_class(cfg.spec),
        cfg.class_field,
        vc=vc.name,
        vc_max=vc.max_priority_class,
        may_use_crit=may_use_crit,
    )


def job_class(spec: NormalizedSpec, vc: VirtualCluster) -> str:
    """The class a job runs as: the one it names, else its VC's default."""
    return requested_class(spec) or vc.default_priority_class


def time_limit(spec: NormalizedSpec, vc: VirtualCluster) -> timelimit.Resolved:
    """The job's time limit: its own ask (extras.maxRunTimeMinutes) within its VC's maximum, else
    the VC's default."""
    asked = timelimit.asked_seconds(dict(spec.get("extras") or {}))
    return timelimit.resolve(asked, vc.default_run_minutes, vc.max_run_minutes)


def infiniband_errors(spec: NormalizedSpec, vc: VirtualCluster, has_infiniband: Callable[[], bool]) -> list[FieldError]:
    """extraContainerOptions.infiniband: true only where a node of the job's VC declares InfiniBand
    (`has_infiniband`: vc_has_infiniband, asked only when a role wants it)."""
    roles = infiniband_roles(spec)
    if not roles or has_infiniband():
        return []
    return [
        (f"taskRoles.{role}.extraContainerOptions.infiniband", Message.of("config.infiniband", vc=vc.name))
        for role in roles
    ]


def vc_has_infiniband(vc: VirtualCluster) -> bool:
    """Whether a node of the VC declares InfiniBand (its partition's nodes for a Slurm VC, else the
    portal's own nodes)."""
    nodes = Node.objects.filter(infiniband=True)
    if vc.slurm_partition:
        return nodes.filter(slurm_partition=vc.slurm_partition).exists()
    return nodes.exclude(executor=Node.Executor.SLURM).exists()


def validate_for_user(user: Any, text: str) -> Checked:
    """The protocol's checks plus those that need the database; raises JobConfigError."""
    return SubmitChecks(user).validate(read(text).config)


@dataclass(frozen=True)
class Checked:
    """A config that passed every check at submit, and what the checks worked out for its job,
    each once: its VC, class, time limit and the jobs it waits for."""

    config: LoadedConfig
    vc: VirtualCluster
    priority_class: str
    time_limit_seconds: int | None
    waits_for: list[tuple[str, Job]]


class SubmitChecks:
    """Every check a config gets at submit beyond the protocol's, for one user's submit. What they
    read of the database, the file system and DNS is read once per question and kept, so a
    sweep's runs, each checked as a job once its values are in, cost little more than one."""

    def __init__(self, user: Any) -> None:
        self.user = user
        self.registries = RegistryJudge()
        self._answers: dict[tuple[Any, ...], Any] = {}

    def _once(self, key: tuple[Any, ...], answer: Callable[[], Any]) -> Any:
        if key not in self._answers:
            self._answers[key] = answer()
        return self._answers[key]

    def validate(self, cfg: LoadedConfig) -> Checked:
        """The config with its VC, class, time limit and dependencies; raises JobConfigError naming
        each field at fault."""
        user = self.user
        check_task_counts(cfg)
        vc_name = cfg.spec["defaults"]["virtualCluster"]
        access = self._once(("vc", vc_name), lambda: vc_access(vc_name, user))
        if access is None:
            raise UnknownVirtualCluster([(cfg.vc_field, Message.of("config.vc_unknown", name=vc_name))])
        vc = access.vc
        if not access.open:
            raise VirtualClusterForbidden([(cfg.vc_field, Message.of("config.vc_forbidden", name=vc_name))])
        errors: list[FieldError] = list(cfg.secret_errors)
        wanted_gpu = gpu_type(cfg.spec)
        known_gpus = (
            self._once(("gpu types",), lambda: list(GpuType.objects.values_list("name", flat=True)))
            if wanted_gpu
            else []
        )
        if wanted_gpu and wanted_gpu not in known_gpus:
            unknown = (
                Message.of("config.gpu_type_unknown", name=wanted_gpu, known=", ".join(known_gpus))
                if known_gpus
                else Message.of("config.gpu_type_unknown_none", name=wanted_gpu)
            )
            errors.append((cfg.gpu_type_field, unknown))
        paths = job_paths(cfg.spec)
        errors.extend(
            self._once(
                ("paths", *sorted(paths.items())), lambda: storage.validate_job_paths(user.get_username(), cfg.spec)
            )
        )
        asked = storage_requests(cfg.spec)
        errors.extend(
            self._once(
                ("storages", tuple(asked.named), asked.defaults, tuple(asked.errors_said())),
                lambda: validate_storage_requests(user, cfg.spec),
            )
        )
        errors.extend(unsupported(cfg.spec))
        errors.extend(priority_errors(vc, cfg, may_use_crit=access.crit))
        errors.extend(grace_errors(cfg.spec, cap=settings.PAI_MAX_GRACE_SECONDS))
        errors.extend(shm_errors(cfg.spec, cap=settings.PAI_MAX_SHM_MB))
        errors.extend(
            infiniband_errors(cfg.spec, vc, lambda: self._once(("infiniband", vc.pk), lambda: vc_has_infiniband(vc)))
        )
        errors.extend(image_reference_errors(cfg.spec, cfg.protocol_version))
        errors.extend(self.registries.errors(cfg.spec, cfg.protocol_version))
        if vc.slurm_partition:
            errors.extend(fixed_port_errors(cfg.spec))
        limit = time_limit(cfg.spec, vc)
        if limit.error:
            errors.append((timelimit.FIELD, limit.error))
        waits_for, dependency_errors = self._dependencies(cfg.spec)
        errors.extend(dependency_errors)
        if errors:
            raise JobConfigError(errors)
        return Checked(cfg, vc, job_class(cfg.spec, vc), limit.seconds, waits_for)

    def _dependencies(self, spec: NormalizedSpec) -> tuple[list[tuple[str, Job]], list[FieldError]]:
        """The jobs a config waits for, and the errors of those that name none (jobs.dependencies);
        a sweep's runs, naming the same jobs, share one resolution."""
        return self._once(
            ("dependencies", *dependencies.references(spec)), lambda: dependencies.resolve(self.user, spec)
        )


# A submit's rows, their INSERTs compiled once per process (as save() and bulk_create write them).
_JOB_INSERT: PreparedInsert[Job] = PreparedInsert(Job)
_TASK_INSERT: PreparedInsert[Task] = PreparedInsert(Task)


def submit_job(user: Any, config: str | Submission) -> Job:
    """Validate a job's config and create the job and its tasks, WAITING, in one transaction. A
    config that may be a sweep goes through jobs.submit instead (this makes one job of it)."""
    submission = config if isinstance(config, Submission) else read(config)
    checked = SubmitChecks(user).validate(submission.config)
    job = new_job(user, checked, submission.masked_text)
    try:
        with transaction.atomic():
            _JOB_INSERT.insert(job)
            dependencies.record(job, checked.waits_for)
            _TASK_INSERT.insert_all(new_tasks(job))
            InteractiveApp.objects.bulk_create(new_apps(job))
            lifecycle.event(job.pk, "submitted", Message.of("event.submitted", vc=checked.vc.name))
    except IntegrityError as exc:
        taken = Message.of("config.job_name_taken", name=job.name, user=user.get_username())
        raise JobNameConflict(taken, name_field(job.protocol_version)) from exc
    wake_scheduler()
    return job


def new_job(user: Any, checked: Checked, masked_text: str) -> Job:
    """An unsaved WAITING job of a checked config (`masked_text`: its text, every secret value as
    ******), with its own key pair, held while it waits for other jobs."""
    cfg, spec = checked.config, checked.config.spec
    job = Job(
        owner=user,
        name=spec["name"],
        virtual_cluster=checked.vc,
        protocol_version=cfg.protocol_version,
        config_text=masked_text,  # the values live only in secrets_encrypted
        spec=spec,
        secrets_encrypted=encrypt_text(json.dumps(cfg.secrets)) if cfg.secrets else "",
        priority_class=checked.priority_class,
        priority=class_number(checked.priority_class),
        gpu_count=spec_totals(spec)[2],
        time_limit_seconds=checked.time_limit_seconds,
        held=bool(checked.waits_for),
    )
    attach_new_keypair(job)
    return job


def new_tasks(job: Job) -> list[Task]:
    """A saved job's tasks, unsaved."""
    return [
        Task(job=job, role=role, index=index)
        for role, role_spec in job.spec["taskRoles"].items()
        for index in range(role_spec["instances"])
    ]


def stop_job(job: Job, by: Any) -> Job:
    """Ask the scheduler to stop every task; it records STOPPED when they are gone.
    Raises JobStateError when the job has already finished."""
    lifecycle.request_stop(job, by.get_username())
    wake_scheduler()
    job.refresh_from_db()
    return job


def stoppable_jobs(user: Any, ids: list[int]) -> QuerySet[Job]:
    """Those of the jobs named by id that the user may stop and that have not finished."""
    return visible_jobs(user).filter(pk__in=ids).exclude(state__in=FINISHED_JOB_STATES).order_by("-created_at")


def stop_jobs(by: Any, ids: list[int]) -> int:
    """Stop several jobs at once (the job list's bulk stop), in one update however many; the ones
    that finished meanwhile are left as they are. Returns how many were asked to stop."""
    asked = lifecycle.request_stops(stoppable_jobs(by, ids), by.get_username())
    wake_scheduler()
    return asked


def restart_job(job: Job, by: Any) -> Job:
    """START on a finished job: it goes back to the queue as a new attempt. The VC is checked
    as at submit (the owner may have lost access since)."""
    if not job.virtual_cluster.is_open_to(job.owner):
        refusal = Message.of("config.vc_no_longer", user=job.owner.get_username(), name=job.virtual_cluster.name)
        raise VirtualClusterForbidden([(vc_field(job.protocol_version), refusal)])
    lifecycle.restart(job, by.get_username())
    wake_scheduler()
    job.refresh_from_db()
    return job


def change_priority_class(job: Job, by: Any, name: Any) -> Job:
    """A waiting job's class, as its owner or an admin changes it: checked as at submit (the VC's
    highest class, who may use `crit`: the one who changes it). Raises JobConfigError naming
    `jobPriorityClass`, or JobStateError once the job no longer waits."""
    vc = job.virtual_cluster
    if not isinstance(name, str) or not name:
        raise JobConfigError([(TOP_LEVEL_FIELD, Message.of("config.choice", options=", ".join(PRIORITY_CLASSES)))])
    errors = class_errors(
        name, TOP_LEVEL_FIELD, vc=vc.name, vc_max=vc.max_priority_class, may_use_crit=vc.may_use_crit(by)
    )
    if errors:
        raise JobConfigError(errors)
    if not lifecycle.set_priority_class(job, name, class_number(name), by.get_username()):
        raise JobStateError(Message.of("job_state.class_while_waiting", job=job.full_name, state=str(job.state)))
    job.refresh_from_db()
    return job


MAX_TAG_LENGTH = JobTag._meta.get_field("name").max_length or 255


def tag_error(name: Any) -> Message | None:
    """What is wrong with a tag, in OpenPAI's rule (a non-empty string without commas: the list's
    filters take comma lists), or None."""
    if not isinstance(name, str) or not name.strip():
        return Message.of("tag.blank")
    if "," in name:
        return Message.of("tag.comma")
    if len(name) > MAX_TAG_LENGTH:
        return Message.of("tag.too_long", most=MAX_TAG_LENGTH)
    return None


def add_tag(job: Job, name: str) -> None:
    """Tag the job (adding a tag it has is no change, as in OpenPAI); check tag_error first."""
    JobTag.objects.get_or_create(job=job, name=name)


def remove_tag(job: Job, name: str) -> bool:
    """Remove the tag; False when the job did not have it."""
    deleted, _ = JobTag.objects.filter(job=job, name=name).delete()
    return deleted > 0


def visible_jobs(user: Any) -> QuerySet[Job]:
    """The jobs a user may act on and read in full (config, logs, keys, terminals): their own;
    admins: everyone's."""
    jobs = Job.objects.select_related("owner", "virtual_cluster")
    if is_admin(user):
        return jobs
    return jobs.filter(owner=user)


def listed_jobs(user: Any) -> QuerySet[Job]:
    """The jobs a user sees in lists and read-only summaries: everyone's when the job list is shared
    (settings.PAI_SHARED_JOB_LIST, OpenPAI's way), else those of visible_jobs."""
    if _list_is_shared(user):
        return Job.objects.select_related("owner", "virtual_cluster")
    return visible_jobs(user)


def listed_owner(user: Any) -> int | None:
    """Whose jobs listed_jobs gives the user: None for everyone's, else the user's own id (for a
    list whose SQL is compiled once, web.api.views.common; tests hold the two to each other)."""
    return None if _list_is_shared(user) or is_admin(user) else user.pk


def _list_is_shared(user: Any) -> bool:
    """Whether the user sees everyone's jobs in lists and summaries (listed_jobs)."""
    return bool(settings.PAI_SHARED_JOB_LIST and user.is_authenticated)


def may_manage(user: Any, job: Job) -> bool:
    """The owner and admins: stop, restart, clone, config, logs, SSH."""
    return is_admin(user) or job.owner_id == user.pk


def split_full_name(full_name: str) -> tuple[str, str]:
    """`<owner>~<name>`: user names never hold `~`, so split at the first one."""
    owner, sep, name = full_name.partition("~")
    if not sep or not owner or not name:
        raise Job.DoesNotExist(f"{full_name!r} is not a job name of the form <user>~<job>")
    return owner, name


# A job by its full name, with its owner and VC, as visible_jobs reads it: every job route asks,
# compiled once (queries.prepared). (owner, name) is unique.
_JOB_BY_NAME: Prepared[Job] = Prepared(
    lambda owner, name: (
        Job.objects.select_related("owner", "virtual_cluster").filter(owner__username=owner, name=name).order_by()[:1]
    ),
    str,
    str,
)


def get_job_for(user: Any, full_name: str) -> Job:
    """The job, if the user may act on it (visible_jobs); Job.DoesNotExist otherwise (answer 404,
    never 403)."""
    job = _JOB_BY_NAME.first(*split_full_name(full_name))
    if job is None or not may_manage(user, job):
        raise Job.DoesNotExist(f"no job {full_name!r} the user may act on")
    return job


def get_job_summary_for(user: Any, full_name: str) -> Job:
    """The job, if the user may read its summary (listed_jobs); Job.DoesNotExist otherwise."""
    job = _JOB_BY_NAME.first(*split_full_name(full_name))
    if job is None or not (_list_is_shared(user) or may_manage(user, job)):
        raise Job.DoesNotExist(f"no job {full_name!r} the user may read")
    return job
