"""Fixtures for running jobs end to end on the process executor with the real scheduler loop."""

import itertools
import time
from collections.abc import Iterator

import psycopg
import pytest
from django.db import connection

from clusters.executors.base import TaskLaunch
from clusters.executors.bells import bell
from clusters.models import Node
from jobs.actions import submit_job
from jobs.models import Job
from scheduling.scheduler import Scheduler
from tests.factories import default_image
from tests.scheduler.fake_engine import engine_with  # noqa: F401  (the fake Docker engine's fixture)


@pytest.fixture
def process_node(db, settings, tmp_path, worker_work_root, process_work_root):
    settings.PAI_WORK_ROOT = worker_work_root
    settings.PAI_LOG_DIR = tmp_path / "logs"
    settings.PAI_FS_ROOT = tmp_path / "fs"
    from clusters.executors.registry import executor_for

    executor_for.cache_clear()
    yield Node.objects.create(name="local", executor="process", cpus=8, memory_mb=16384)
    executor_for.cache_clear()


@pytest.fixture
def quiet_engines(monkeypatch):
    """Every node's engine answers at once and runs nothing."""
    from bench.scheduler_scale import InstantExecutor
    from scheduling import executors

    engine = InstantExecutor()
    monkeypatch.setattr(executors, "node_executor", lambda node: engine)
    return engine


@pytest.fixture
def scheduler():
    return Scheduler(holder="test-scheduler")


@pytest.fixture
def submit(user, process_node):
    def submit_text(text: str, owner=None) -> Job:
        return submit_job(owner or user, text)

    return submit_text


@pytest.fixture
def run_until(scheduler):
    def run(job: Job, *states: str, timeout: float = 20.0) -> Job:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            scheduler.run_once()
            job.refresh_from_db()
            if job.state in states:
                return job
            bell().wait(0.02)  # (a task's end rings it; at 0.05 s, ~11% of a real-run test's wall was this wait)
        raise AssertionError(f"job stayed {job.state}, wanted {states}; reason: {job.pending_reason!r}")

    return run


def passes_until(scheduler: Scheduler, done, timeout: float = 60.0) -> None:
    """Passes, a little apart as the loop makes them, until `done()` says so: a time budget, not a
    count of passes (an idle pass takes half a millisecond, so a count is no budget at all)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        scheduler.run_once()
        if done():
            return
        bell().wait(0.01)
    raise AssertionError(f"not done after {timeout:g} s of passes")


def v2_job(name: str, roles: str, extra: str = "") -> str:
    """A v2 YAML job on the test image; `roles` is the indented taskRoles block."""
    return f"""protocolVersion: 2
name: {name}
type: job
prerequisites:
  - name: image
    type: dockerimage
    uri: {default_image()}
{extra}taskRoles:
{roles}"""


def role(name: str, command: str, instances: int = 1, cpu: int = 1, gpu: int = 0, extra: str = "") -> str:
    return f"""  {name}:
    instances: {instances}
    dockerImage: image
{extra}    resourcePerInstance: {{cpu: {cpu}, memoryMB: 256, gpu: {gpu}}}
    commands:
      - "{command}"
"""


@pytest.fixture
def make_launch(tmp_path):
    def make(command: str, **overrides) -> TaskLaunch:
        values = dict(
            job_id=7,
            job_name="alice~demo",
            job_attempt=1,
            role="worker",
            index=0,
            task_attempt=1,
            image="unused",
            command=command,
            env={"PAI_JOB_NAME": "demo"},
            cpu=1,
            memory_mb=100,
            shm_mb=64,
            gpus=[],
            ports={},
            log_path=tmp_path / "logs" / "worker-0.log",
            work_dir=tmp_path / "task",
        )
        values.update(overrides)
        return TaskLaunch(**values)

    return make


def ended_in_order(*jobs: Job) -> bool:
    """Each job launched only after the one before it had ended."""
    return all(
        later.launched_at is not None and earlier.completed_at is not None and later.launched_at >= earlier.completed_at
        for earlier, later in itertools.pairwise(jobs)
    )


@pytest.fixture
def postgresql_admin() -> Iterator[psycopg.Connection]:
    """The test's own connection to the test database, beside the scheduler's (PostgreSQL only)."""
    if connection.vendor != "postgresql":
        pytest.skip("needs PostgreSQL (CI's PostgreSQL run)")
    settings = connection.settings_dict
    with psycopg.connect(
        host=settings["HOST"] or "127.0.0.1",
        port=settings["PORT"] or 5432,
        user=settings["USER"] or "postgres",
        dbname=settings["NAME"],
        autocommit=True,
    ) as admin:
        yield admin
    connection.close()  # (killed or not: the flush after the test opens a fresh one)
