"""Reads compiled once (queries.prepared) answer exactly what their querysets answer: the same
rows, the same values as Django converts them, their select_related objects loaded; one query each,
with each call's own arguments. Django's internals they lean on change only with an upgrade: these
tests are where that shows."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from django.contrib.auth import get_user_model
from django.db.models import F, Q

from clusters.models import Node
from jobs.models import Job, JobEvent, JobTag, Task
from queries import prepared
from queries.prepared import ListOf, Prepared, PreparedInsert, PreparedUpdate
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


def test_it_takes_an_argument_of_a_positive_or_small_integer_field(finished_job):
    # (Django 5 makes no SQL of a lookup outside its field's range: a marker must fit every one)
    attempts: Prepared[str] = Prepared(
        lambda attempt: Task.objects.filter(attempt=attempt).order_by("pk").values_list("role", flat=True), int
    )
    assert attempts(0) == ["worker", "worker", "ps"] and attempts(1) == []


def test_it_never_takes_a_constant_equal_to_a_marker_for_an_argument(finished_job, user, default_vc):
    create_job(user, "marked", priority=31_337, gpu_count=2)
    marked: Prepared[str] = Prepared(
        lambda gpus: Job.objects.filter(priority=31_337, gpu_count=gpus).values_list("name", flat=True), int
    )
    assert marked(2) == ["marked"] and marked(3) == []


# List arguments (an `__in` lookup's), compiled once per size bucket.


def names_of(ids):
    return Job.objects.filter(pk__in=ids).order_by("pk").values_list("name", flat=True)


NAMES_OF: Prepared[str] = Prepared(names_of, ListOf(int))


@pytest.fixture
def five_jobs(user, default_vc) -> list[int]:
    return [create_job(user, f"job-{number}").pk for number in range(5)]


@pytest.mark.parametrize("picked", [[0], [0, 1], [4, 2, 0], [1, 1, 3, 3, 3], [0, 1, 2, 3, 4]])
def test_it_reads_a_list_argument_as_its_queryset_does(five_jobs, picked):
    ids = [five_jobs[number] for number in picked]
    assert NAMES_OF(ids) == list(names_of(ids))


def test_it_compiles_a_list_once_for_every_size_in_its_bucket(five_jobs, django_assert_num_queries):
    read: Prepared[str] = Prepared(names_of, ListOf(int))
    for count in (3, 4, 3):
        with django_assert_num_queries(1):
            assert read(five_jobs[:count]) == [f"job-{number}" for number in range(count)]
    assert [sizes for _, sizes in read._compiled] == [(4,)]


def test_it_leaves_a_list_too_long_to_django(five_jobs, monkeypatch):
    monkeypatch.setattr(prepared, "LIST_MOST", 2)
    read: Prepared[str] = Prepared(names_of, ListOf(int))
    assert read(five_jobs) == [f"job-{number}" for number in range(5)]
    assert read._compiled == {}


def test_it_runs_no_query_for_an_empty_list_where_django_runs_none(five_jobs, django_assert_num_queries):
    with django_assert_num_queries(0):
        assert NAMES_OF([]) == []


def test_it_reads_an_empty_list_as_its_queryset_does_in_an_or(five_jobs):
    either: Prepared[str] = Prepared(
        lambda ids, name: (
            Job.objects.filter(Q(pk__in=ids) | Q(name=name)).order_by("pk").values_list("name", flat=True)
        ),
        ListOf(int),
        str,
    )
    assert either([], "job-3") == ["job-3"] and either([five_jobs[1]], "job-3") == ["job-1", "job-3"]


# Updates compiled once (queries.prepared.PreparedUpdate) change what queryset.update changes.

PLACE = PreparedUpdate(
    lambda task_id, state: Task.objects.filter(pk=task_id, state=state),
    int,
    str,
    sets=("state", "node", "gpus", "ports", "started_at", "exit_code"),
    fixed={"attempt": F("attempt") + 1, "exit_diagnostics_message": {"code": "x"}},  # (a JSON constant too)
)


def test_it_updates_a_row_as_queryset_update_does(user, default_vc):
    node = Node.objects.create(name="node-1", cpus=8, memory_mb=8192)
    job = create_job(user, "placed", roles={"worker": 2})
    first, second = Task.objects.filter(job=job).order_by("index")
    values = {
        "state": "RUNNING",
        "node": node,
        "gpus": [0, 3],
        "ports": {"ssh": 40022},
        "started_at": datetime(2026, 12, 5, 1, 2, 3, 456789, tzinfo=UTC),
        "exit_code": None,
    }
    assert PLACE(first.pk, "WAITING", **values) == 1
    assert Task.objects.filter(pk=second.pk, state="WAITING").update(**PLACE.fixed, **values) == 1
    first_row, second_row = _row(Task, first.pk), _row(Task, second.pk)
    assert first_row == {**second_row, "index": 0}
    assert first_row["attempt"] == 1 and first_row["node_id"] == node.pk
    assert Task.objects.get(pk=first.pk).started_at == values["started_at"]


def test_it_changes_only_the_rows_its_arguments_select(user, default_vc):
    job = create_job(user, "placed")
    (task,) = job.tasks.all()
    unchanged = _row(Task, task.pk)
    assert PLACE(task.pk, "RUNNING", state="FAILED", node=None, gpus=[], ports={}, started_at=None, exit_code=1) == 0
    assert _row(Task, task.pk) == unchanged


def test_it_updates_the_rows_of_a_list_argument(five_jobs):
    hold = PreparedUpdate(lambda ids: Job.objects.filter(pk__in=ids), ListOf(int), sets=("held",))
    assert hold(five_jobs[1:4] + five_jobs[1:2], held=True) == 3
    assert list(Job.objects.filter(held=True).order_by("pk").values_list("pk", flat=True)) == five_jobs[1:4]
    assert hold([], held=False) == 0


def test_it_refuses_values_other_than_its_sets(user, default_vc):
    job = create_job(user, "placed")
    with pytest.raises(TypeError, match="state"):
        PLACE(job.pk, "WAITING", state="RUNNING")


# Inserts compiled once (queries.prepared.PreparedInsert) write what save() and bulk_create write.

JOB_INSERT: PreparedInsert[Job] = PreparedInsert(Job)
TASK_INSERT: PreparedInsert[Task] = PreparedInsert(Task)
EVENT_INSERT: PreparedInsert[JobEvent] = PreparedInsert(JobEvent)


def _row(model, pk) -> dict:
    """The row as stored, every column but the key and the times the write itself stamps."""
    values = model.objects.filter(pk=pk).values().get()
    return {name: value for name, value in values.items() if name not in ("id", "created_at", "updated_at")}


def _job(user, vc, name: str) -> Job:
    return Job(
        owner=user,
        name=name,
        virtual_cluster=vc,
        config_text="name: x",
        spec={"name": name, "taskRoles": {"worker": {"instances": 2}}, "défaut": ["ü", 1.5, None]},
        secrets_encrypted="sealed",
        priority=300,
        gpu_count=2,
        time_limit_seconds=3600,
        held=True,
    )


def test_it_inserts_a_row_as_save_writes_it(user, default_vc):
    saved, inserted = _job(user, default_vc, "saved"), _job(user, default_vc, "inserted")
    saved.save()
    JOB_INSERT.insert(inserted)
    assert inserted.pk is not None and inserted.pk != saved.pk
    assert not inserted._state.adding and inserted._state.db == "default"
    assert inserted.created_at is not None and inserted.updated_at is not None
    assert _row(Job, inserted.pk) == {**_row(Job, saved.pk), "name": "inserted", "spec": inserted.spec}
    assert Job.objects.get(pk=inserted.pk).created_at == inserted.created_at


def test_it_inserts_many_rows_as_bulk_create_writes_them(user, default_vc):
    job = _job(user, default_vc, "job")
    JOB_INSERT.insert(job)
    created = Task.objects.bulk_create([Task(job=job, role="ps", index=0)])
    inserted = TASK_INSERT.insert_all([Task(job=job, role="worker", index=index) for index in range(3)])
    assert [task.pk for task in inserted] == sorted(task.pk for task in inserted) and all(
        task.pk > created[0].pk for task in inserted
    )
    for index, task in enumerate(inserted):
        assert _row(Task, task.pk) == {**_row(Task, created[0].pk), "role": "worker", "index": index}
    assert TASK_INSERT.insert_all([]) == []


def test_it_inserts_in_batches_the_database_takes(user, default_vc, monkeypatch, django_assert_num_queries):
    job = _job(user, default_vc, "job")
    JOB_INSERT.insert(job)
    from django.db import connection

    monkeypatch.setattr(connection.ops, "bulk_batch_size", lambda fields, objs: 2)
    with django_assert_num_queries(2):  # two statements of at most two rows
        TASK_INSERT.insert_all([Task(job=job, role="worker", index=index) for index in range(3)])
    assert sorted(Task.objects.filter(job=job).values_list("index", flat=True)) == [0, 1, 2]


def test_it_fails_a_duplicate_as_save_does_and_leaves_the_transaction_usable(user, default_vc):
    from django.db import IntegrityError, transaction

    JOB_INSERT.insert(_job(user, default_vc, "twice"))
    with pytest.raises(IntegrityError), transaction.atomic():
        JOB_INSERT.insert(_job(user, default_vc, "twice"))
    assert Job.objects.filter(name="twice").count() == 1


def test_it_leaves_what_it_cannot_write_the_same_way_to_django(user, default_vc):
    from django.db.models.functions import Now
    from django.db.models.signals import post_save

    given = _job(user, default_vc, "given-key")
    given.pk = 987_654
    JOB_INSERT.insert(given)  # a key given: save()'s update-or-insert
    assert Job.objects.filter(pk=987_654, name="given-key").exists()
    expression = _job(user, default_vc, "expression")
    expression.launched_at = Now()
    JOB_INSERT.insert(expression)
    assert Job.objects.get(pk=expression.pk).launched_at is not None
    heard = []

    def receiver(sender, instance, created, **kwargs):
        heard.append((instance.message, created))

    post_save.connect(receiver, sender=JobEvent)
    try:
        EVENT_INSERT.insert(JobEvent(job_id=given.pk, kind="note", message="heard"))
    finally:
        post_save.disconnect(receiver, sender=JobEvent)
    assert heard == [("heard", True)]
