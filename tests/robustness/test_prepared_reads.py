"""Reads compiled once (queries.prepared) answer exactly what their querysets answer: the same
rows, the same values as Django converts them, their select_related objects loaded; one query each,
with each call's own arguments. Django's internals they lean on change only with an upgrade: these
tests are where that shows."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from django.contrib.auth import get_user_model

from jobs.models import Job, JobTag, Task
from queries.prepared import Prepared
from tests.factories import create_job

User = get_user_model()


def job_by_name(owner: str, name: str):
    return Job.objects.select_related("owner", "virtual_cluster").filter(owner__username=owner, name=name)


JOB_BY_NAME: Prepared[Job] = Prepared(job_by_name, str, str)
TASKS: Prepared[Task] = Prepared(
    lambda job_id: Task.objects.select_related("node").filter(job_id=job_id).order_by("role", "index"), int
)
TAG_NAMES: Prepared[str] = Prepared(
    lambda job_id: JobTag.objects.filter(job_id=job_id).order_by("id").values_list("name", flat=True), int
)


@pytest.fixture
def finished_job(user, default_vc):
    return create_job(
        user,
        "finished",
        roles={"worker": 2, "ps": 1},
        state="FAILED",
        exit_code=-1200,
        launched_at=datetime(2026, 11, 26, 3, 4, 5, 678999, tzinfo=UTC),
        exit_diagnostics_message={"code": "x", "params": {}, "message": "x"},
    )


def test_it_gives_the_model_instances_its_queryset_gives(finished_job):
    (prepared,) = JOB_BY_NAME("alice", "finished")
    (plain,) = job_by_name("alice", "finished")
    fields = [field.attname for field in Job._meta.concrete_fields]
    assert [getattr(prepared, name) for name in fields] == [getattr(plain, name) for name in fields]
    assert prepared.launched_at == datetime(2026, 11, 26, 3, 4, 5, 678999, tzinfo=UTC)
    assert prepared.spec == plain.spec and isinstance(prepared.spec, dict)


def test_it_loads_the_select_related_objects_without_another_query(finished_job, django_assert_num_queries):
    with django_assert_num_queries(1):
        (job,) = JOB_BY_NAME("alice", "finished")
        assert (job.owner.username, job.virtual_cluster.name) == ("alice", "default")


def test_it_runs_each_call_with_its_own_arguments(finished_job, other_user, default_vc):
    create_job(other_user, "finished")
    assert [job.owner.username for job in JOB_BY_NAME("bob", "finished")] == ["bob"]
    assert [job.owner.username for job in JOB_BY_NAME("alice", "finished")] == ["alice"]
    assert JOB_BY_NAME("carol", "finished") == []


def test_it_gives_a_missing_related_object_as_none(finished_job):
    tasks = TASKS(finished_job.pk)
    placed = [(task.role, task.index, task.node) for task in tasks]
    assert placed == [("ps", 0, None), ("worker", 0, None), ("worker", 1, None)]


def test_it_gives_flat_values_as_its_queryset_does(finished_job):
    for name in ("b", "a"):
        JobTag.objects.create(job=finished_job, name=name)
    assert TAG_NAMES(finished_job.pk) == ["b", "a"]
    assert TAG_NAMES(finished_job.pk + 1000) == []


def test_it_refuses_an_argument_that_is_no_parameter_of_the_sql(finished_job):
    unused: Prepared[Job] = Prepared(lambda name: Job.objects.all(), str)
    with pytest.raises(ValueError, match="argument 0"):
        unused("finished")
