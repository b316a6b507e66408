"""A task run's start and finish come from one clock and never run backwards (docs/admin/monitoring.md, "Usage"):
the engine's pair when it reports both, the portal's otherwise; the database refuses a run that
ends before it starts, and its migration repairs the rows recorded so before."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.db import IntegrityError, connection, transaction
from django.db.migrations.executor import MigrationExecutor
from django.utils import timezone

from clusters.executors.base import TaskStatus
from clusters.models import Node
from jobs import lifecycle
from jobs.lifecycle import TaskExit
from jobs.models import JobState, Task, TaskAttempt, TaskState
from scheduling import ending
from tests.factories import create_job

pytestmark = pytest.mark.django_db

SECOND = timedelta(seconds=1)


@pytest.fixture
def running_task(user, db) -> Task:
    """A running task attempt whose start the portal stamped now (its first sight of it)."""
    node = Node.objects.create(name="n1", executor="process", cpus=8, memory_mb=8192)
    job = create_job(user, "short", state=JobState.RUNNING, job_attempt=1)
    job.tasks.update(
        state=TaskState.RUNNING, node=node, attempt=1, executor_id="job-1/1/worker-0-1", started_at=timezone.now()
    )
    return Task.objects.select_related("node", "job").get(job=job)


def an_exit(finished_at, started_at=None) -> TaskExit:
    return TaskExit(0, 0, "Succeeded", None, finished_at=finished_at, started_at=started_at)


def test_it_ends_a_run_the_engine_saw_end_before_the_portal_saw_it_start_by_the_portals_clock(running_task):
    stamped = running_task.started_at
    assert stamped is not None
    engine_finish = stamped - 2 * SECOND  # a short task, over before the pass's starts all returned

    ending.record_exit(running_task, TaskStatus(running=False, exit_code=0, finished_at=engine_finish))

    attempt = TaskAttempt.objects.get()
    assert attempt.started_at == stamped and attempt.finished_at is not None
    assert attempt.finished_at >= stamped


def test_it_times_a_run_by_the_engines_own_start_and_finish_when_it_reports_both(running_task):
    stamped = running_task.started_at
    assert stamped is not None
    status = TaskStatus(running=False, exit_code=0, started_at=stamped - 3 * SECOND, finished_at=stamped - 2 * SECOND)

    ending.record_exit(running_task, status)

    attempt = TaskAttempt.objects.get()
    task = Task.objects.get(pk=running_task.pk)
    assert (attempt.started_at, attempt.finished_at) == (stamped - 3 * SECOND, stamped - 2 * SECOND)
    assert (task.started_at, task.finished_at) == (attempt.started_at, attempt.finished_at)


def test_it_ends_a_run_whose_finish_came_before_its_start_at_its_start(running_task):
    stamped = running_task.started_at
    assert stamped is not None

    lifecycle.end_task(running_task, 1, an_exit(stamped - SECOND))

    assert TaskAttempt.objects.values_list("started_at", "finished_at").get() == (stamped, stamped)


def test_it_stops_tasks_stamped_ahead_of_the_clock_at_their_start(running_task):
    ahead = timezone.now() + timedelta(minutes=5)  # stamped before the clock stepped back
    Task.objects.filter(pk=running_task.pk).update(started_at=ahead)

    lifecycle.stop_tasks(running_task.job, -210)

    assert Task.objects.values_list("started_at", "finished_at").get() == (ahead, ahead)
    assert TaskAttempt.objects.values_list("started_at", "finished_at").get() == (ahead, ahead)


def test_it_gives_a_task_retried_in_place_no_finish_before_its_next_start(running_task):
    lifecycle.retry_task(running_task, 1, an_exit(timezone.now()), charged=True)
    task = Task.objects.get(pk=running_task.pk)
    lifecycle.record_tasks_started([(task, "job-1/1/worker-0-2", "", "n1", timezone.now() + SECOND)])

    task.refresh_from_db()
    assert task.attempt == 2 and task.started_at is not None and task.finished_at is None


def test_the_database_refuses_a_task_that_ends_before_it_starts(running_task):
    assert running_task.started_at is not None
    with pytest.raises(IntegrityError), transaction.atomic():
        Task.objects.filter(pk=running_task.pk).update(finished_at=running_task.started_at - SECOND)


def test_the_database_refuses_an_attempt_that_ends_before_it_starts(running_task):
    now = timezone.now()
    with pytest.raises(IntegrityError), transaction.atomic():
        TaskAttempt.objects.create(
            job=running_task.job,
            job_attempt=1,
            role="worker",
            index=0,
            attempt=1,
            started_at=now,
            finished_at=now - SECOND,
        )


# slow (CI's, not `make fast`'s): the schema taken back and forward again renders every migration's
# state, ~2.7 s of CPU; the migration is history, which a change to the models does not touch.
@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_the_migration_repairs_runs_recorded_ending_before_they_started(user):
    executor = MigrationExecutor(connection)
    after = next(key for key in executor.loader.disk_migrations if key[1].endswith("_runs_end_after_start"))
    before = [parent.key for parent in executor.loader.graph.node_map[after].parents if parent.key[0] == "jobs"]
    # (The job made by today's models, before the schema goes back: later migrations add its columns.)
    job = create_job(user, "old", roles={"worker": 2}, state=JobState.RUNNING, job_attempt=1)
    ended, retried = job.tasks.order_by("index")
    executor.migrate(before)
    try:
        now = timezone.now()
        # As recorded before: an ended run whose start was stamped after the engine's finish,
        # and a task retried in place, started again beside its previous attempt's finish.
        Task.objects.filter(pk=ended.pk).update(state=TaskState.SUCCEEDED, started_at=now, finished_at=now - SECOND)
        Task.objects.filter(pk=retried.pk).update(
            state=TaskState.RUNNING, attempt=2, started_at=now, finished_at=now - SECOND
        )
        # (Its row as the schema then had it: today's model has later columns.)
        attempt_then = executor.loader.project_state(before).apps.get_model("jobs", "TaskAttempt")
        attempt_then.objects.create(
            job_id=job.pk, job_attempt=1, role="worker", index=0, attempt=1, started_at=now, finished_at=now - SECOND
        )

        MigrationExecutor(connection).migrate([after])
    finally:
        MigrationExecutor(connection).migrate(MigrationExecutor(connection).loader.graph.leaf_nodes())

    assert TaskAttempt.objects.values_list("started_at", "finished_at").get() == (now - SECOND, now - SECOND)
    assert Task.objects.values_list("started_at", "finished_at").get(pk=ended.pk) == (now - SECOND, now - SECOND)
    assert Task.objects.values_list("started_at", "finished_at").get(pk=retried.pk) == (now, None)
