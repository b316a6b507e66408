"""Web page fixtures: signed-in clients and jobs written straight into the database."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from django.test import Client

from jobs.models import Job, JobEvent, Task
from tests.conftest import normalized_spec

V2_CONFIG = """protocolVersion: 2
name: {name}
type: job
prerequisites:
  - name: image
    type: dockerimage
    uri: pai-portal/base:latest
secrets:
  token: s3cr3t-value
taskRoles:
  worker:
    instances: 1
    dockerImage: image
    resourcePerInstance: {{cpu: 1, memoryMB: 1024, gpu: 0}}
    commands:
      - echo hello
"""

V1_CONFIG = """{{
  "jobName": "{name}",
  "image": "pai-portal/base:latest",
  "retryCount": 0,
  "taskRoles": [
    {{"name": "main", "taskNumber": 1, "cpuNumber": 1, "memoryMB": 256, "gpuNumber": 0, "command": "echo hi"}}
  ]
}}"""


def spec_of(name: str, roles: dict[str, int] | None = None) -> dict[str, Any]:
    """A small normalized spec, enough for the pages (the list never reads it)."""
    return normalized_spec(name, roles or {"worker": 1}, secrets={"token": "******"})


@pytest.fixture
def make_job(default_vc) -> Callable[..., Job]:
    """A job row with its tasks, as the scheduler would have left it."""

    def make(owner, name: str = "job", state: str = "WAITING", roles: dict[str, int] | None = None, **fields) -> Job:
        spec = spec_of(name, roles)
        job = Job.objects.create(
            owner=owner,
            name=name,
            state=state,
            virtual_cluster=fields.pop("virtual_cluster", default_vc),
            config_text=V2_CONFIG.format(name=name),
            spec=spec,
            **fields,
        )
        for role, role_spec in spec["taskRoles"].items():
            for index in range(role_spec["instances"]):
                Task.objects.create(job=job, role=role, index=index, state="WAITING")
        JobEvent.objects.create(job=job, kind="submitted", message="Submitted to virtual cluster default.")
        return job

    return make


@pytest.fixture
def alice_client(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


@pytest.fixture
def bob_client(other_user) -> Client:
    client = Client()
    client.force_login(other_user)
    return client
