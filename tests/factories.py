"""Test data builders: job configs on the configured image, users with known passwords, and jobs
written straight into the database. A default changes here, once, for every test."""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any, cast

from django.conf import settings
from django.contrib.auth import get_user_model

from clusters.models import VirtualCluster
from jobs.models import InteractiveApp, Job, Task, pending_reason_fields
from jobs.protocol.limits import spec_totals
from jobs.protocol.spec import NormalizedSpec
from jobs.ssh import attach_new_keypair


def default_image() -> str:
    """The image test jobs run: the one the portal proposes (PAI_DEFAULT_IMAGE)."""
    return str(settings.PAI_DEFAULT_IMAGE)


# -- configs, as a user types them -------------------------------------------------------------


def v2_yaml(
    name: str = "hello",
    *commands: str,
    role: str = "worker",
    instances: int = 1,
    memory_mb: int = 256,
    cpu: int = 1,
    ports: str = "",
    vc: str = "default",
    image: str | None = None,
    extra: str = "",
    role_extra: str = "",
) -> str:
    """A v2 YAML config with one task role running `commands` (default `echo hello`).

    `ports` is a flow mapping (`{http: 2}`); `extra` adds top-level lines (`jobRetryCount: 2\\n`,
    secrets, extras); `role_extra` adds lines inside the role, indented four spaces."""
    resources = f"cpu: {cpu}, memoryMB: {memory_mb}, gpu: 0" + (f", ports: {ports}" if ports else "")
    command_lines = "".join(f"      - {command}\n" for command in commands or ("echo hello",))
    return f"""protocolVersion: 2
name: {name}
type: job
prerequisites:
  - name: image
    type: dockerimage
    uri: {image or default_image()}
{extra}defaults:
  virtualCluster: {vc}
taskRoles:
  {role}:
    instances: {instances}
    dockerImage: image
{role_extra}    resourcePerInstance: {{{resources}}}
    commands:
{command_lines}"""


def v1_role(name: str = "main", command: str = "echo hi", **fields: Any) -> dict[str, Any]:
    """A v1 task role: one task, 1 CPU, 256 MB, no GPU; `fields` override or add keys."""
    return {"name": name, "taskNumber": 1, "cpuNumber": 1, "memoryMB": 256, "gpuNumber": 0, "command": command} | fields


def v1_json(
    name: str = "legacy", command: str = "echo hi", *, roles: list[dict[str, Any]] | None = None, **top: Any
) -> str:
    """A v1 JSON config, indented as a user writes it; `top` adds top-level keys (retryCount, dataDir...)."""
    config = {"jobName": name, "image": default_image(), **top, "taskRoles": roles or [v1_role(command=command)]}
    return json.dumps(config, indent=2)


def normalized_spec(name: str, roles: dict[str, int], command: str = "echo hi", **top: Any) -> NormalizedSpec:
    """A small normalized v2 spec, as jobs.protocol.load returns it, for rows made without submitting."""
    return partial_spec(
        **{
            "protocolVersion": 2,
            "name": name,
            "type": "job",
            "jobRetryCount": 0,
            "prerequisites": [{"name": "image", "type": "dockerimage", "uri": default_image()}],
            "parameters": {},
            "secrets": {},
            "defaults": {"virtualCluster": "default"},
            "taskRoles": {
                role: {
                    "instances": count,
                    "completion": {"minFailedInstances": 1, "minSucceededInstances": None},
                    "taskRetryCount": 0,
                    "dockerImage": "image",
                    "resourcePerInstance": {"cpu": 1, "memoryMB": 256, "gpu": 0, "ports": {}},
                    "commands": [command],
                }
                for role, count in roles.items()
            },
            **top,
        }
    )


def partial_spec(**keys: Any) -> NormalizedSpec:
    """A spec with only the keys the unit under test reads, typed as a whole one (normalized_spec)."""
    return cast(NormalizedSpec, keys)


# -- users and jobs in the database ------------------------------------------------------------


def password_for(username: str) -> str:
    return f"{username}-password-1"


def create_user(username: str, *, admin: bool = False) -> Any:
    """A user whose password is password_for(username); `admin` makes a superuser."""
    users = get_user_model().objects
    if admin:
        return users.create_superuser(username, email="", password=password_for(username))
    return users.create_user(username, password=password_for(username))


def create_job(
    owner: Any,
    name: str = "job",
    *,
    roles: dict[str, int] | None = None,
    spec: NormalizedSpec | None = None,
    keypair: bool = False,
    **fields: Any,
) -> Job:
    """A job row with one WAITING task per instance of `roles`, as submit_job leaves it (no events);
    `fields` set Job columns (state, config_text, pending_reason...: its English as an old row has
    it, or its Messages as the scheduler writes them); `keypair` gives it SSH keys."""
    roles = roles or {"worker": 1}
    if isinstance(fields.get("pending_reason"), list):
        fields.update(pending_reason_fields(fields.pop("pending_reason")))
    fields.setdefault("virtual_cluster", VirtualCluster.objects.get_or_create(name="default")[0])
    spec = spec or normalized_spec(name, roles)
    fields.setdefault("gpu_count", spec_totals(spec)[2])
    job = Job(owner=owner, name=name, spec=spec, **fields)
    if keypair:
        attach_new_keypair(job)
    job.save()
    for role, count in roles.items():
        for index in range(count):
            Task.objects.create(job=job, role=role, index=index)
    return job


def create_live_app(
    owner: Any, name: str, kind: str = "jupyter", *, gpus: int = 0, idle_minutes: float | None = None, **fields: Any
) -> InteractiveApp:
    """A running job whose one task holds `gpus` GPUs and serves an app of `kind`: ready and idle for
    `idle_minutes` when given, still starting otherwise; `fields` set the app's columns."""
    from datetime import timedelta

    from django.utils import timezone

    job = create_job(owner, name, state="RUNNING")
    job.tasks.update(state="RUNNING", gpus=list(range(gpus)), ports={kind: [20000 + job.pk]})
    if idle_minutes is not None:
        fields.setdefault("ready_at", timezone.now() - timedelta(minutes=idle_minutes))
    return InteractiveApp.objects.create(
        job=job, kind=kind, role="worker", port_label=kind, slug=f"live{job.pk}{kind}", **fields
    )


def create_jobs(owner: Any, names: Iterable[str]) -> None:
    """Many jobs at once, each as create_job(owner, name) leaves it (one WAITING worker task), in
    two bulk inserts instead of four queries per job."""
    virtual_cluster = VirtualCluster.objects.get_or_create(name="default")[0]
    jobs = []
    for name in names:
        spec = normalized_spec(name, {"worker": 1})
        jobs.append(
            Job(owner=owner, name=name, spec=spec, virtual_cluster=virtual_cluster, gpu_count=spec_totals(spec)[2])
        )
    Job.objects.bulk_create(jobs)
    Task.objects.bulk_create([Task(job=job, role="worker", index=0) for job in jobs])


def create_storage(name: str = "team", **fields: Any) -> Any:
    """A storage config as an admin declares it (validated as the admin's form does); NFS by default."""
    from clusters.models import StorageConfig

    fields.setdefault("kind", StorageConfig.Kind.NFS)
    fields.setdefault("server", "10.0.0.5")
    fields.setdefault("path", f"/export/{name}")
    config = StorageConfig(name=name, **fields)
    config.full_clean()
    config.save()
    return config
