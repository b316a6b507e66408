"""The reads every pass makes are compiled once (queries.prepared): an idle pass builds no SQL (the
ORM's compiling was most of its CPU: 7.9 -> 0.6 ms), and each read answers what its queryset did."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from django.db.models import Count, Max
from django.db.models.functions import Coalesce
from django.db.models.sql import compiler

from clusters.models import Node, VirtualCluster
from jobs.models import Job, JobState, Task, TaskState
from scheduling import quota
from scheduling.scheduler import Scheduler
from tests.factories import create_job

pytestmark = pytest.mark.django_db


def test_it_compiles_no_sql_in_an_idle_pass(quiet_engines, monkeypatch):
    Node.objects.create(name="n0", address="10.0.0.1", cpus=8, memory_mb=8192)
    scheduler = Scheduler()
    for _ in range(3):  # (the first passes reconcile, ping, compile)
        scheduler.run_once()
    compiled: list[str] = []
    as_sql = compiler.SQLCompiler.as_sql

    def counted(self, *args, **kwargs):
        compiled.append(self.query.model.__name__)
        return as_sql(self, *args, **kwargs)

    monkeypatch.setattr(compiler.SQLCompiler, "as_sql", counted)
    assert scheduler.run_once() is False
    assert compiled == []


def test_it_reads_the_queue_signature_as_the_aggregate_did(user, default_vc):
    slurm_vc = VirtualCluster.objects.create(name="slurm", slurm_partition="p")
    scheduler = Scheduler()
    assert scheduler.placer._queue_signature() == (0, None)
    create_job(user, "waiting")
    create_job(user, "held", held=True)
    create_job(user, "asked-to-stop", ending_cause=Job.Ending.STOP)
    create_job(user, "on-slurm", virtual_cluster=slurm_vc)
    create_job(user, "running", state=JobState.RUNNING)
    queue = (
        Job.objects.filter(state=JobState.WAITING, held=False)
        .exclude(ending_cause=Job.Ending.STOP)
        .exclude(virtual_cluster__slurm_partition__gt="")
    )
    found = queue.aggregate(count=Count("pk"), newest=Max("updated_at"))
    assert scheduler.placer._queue_signature() == (1, found["newest"]) == (found["count"], found["newest"])


def test_it_reads_the_tasks_holding_resources_in_their_columns_order(user, default_vc):
    lender = VirtualCluster.objects.create(name="lender")
    node = Node.objects.create(name="n0", address="10.0.0.1", cpus=8, memory_mb=8192)
    launched = datetime(2026, 12, 3, tzinfo=UTC)
    job = create_job(user, "borrowing", state=JobState.RUNNING, borrowed_from=lender, launched_at=launched)
    Task.objects.filter(job=job).update(state=TaskState.RUNNING, node=node, gpus=[1], ports={"ssh": [4000]})
    plain = Task.objects.filter(state=TaskState.RUNNING, node__isnull=False).values_list(
        "node_id",
        "role",
        "gpus",
        "ports",
        "job_id",
        Coalesce("job__borrowed_from__name", "job__virtual_cluster__name"),
        "job__owner__username",
        "job__virtual_cluster__name",
    )
    assert (
        quota.holding_tasks()
        == list(plain)
        == [(node.pk, "worker", [1], {"ssh": [4000]}, job.pk, "lender", "alice", "default")]
    )
