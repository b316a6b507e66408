"""The exits one pass sees are recorded together (scheduling.ending.record_exits): one transaction
of set-based statements whose number does not grow with the exits, each exit recorded once, and
nothing removed from a node before the record commits: a crash in the middle loses none."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from unittest import mock

import pytest
from django.db import connection
from django.test import override_settings
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from clusters.executors.base import Executor, RunningTask, TaskHandle, TaskLaunch, TaskStatus
from clusters.models import Node
from jobs import lifecycle
from jobs.models import Job, JobEvent, JobState, Task, TaskAttempt, TaskState
from scheduling import executors
from scheduling.scheduler import Scheduler
from tests.conftest import rows_for_module
from tests.factories import create_jobs, create_user

JOBS = 50


class HeldTasks(Executor):
    """Tasks run until `exit_all`; then each has exited 0. A removed task is gone (polled again it
    is lost), so an exit removed before its record would be recorded as a lost task."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.tasks: dict[str, dict[str, str]] = {}
        self.exited = False
        self.removed: list[str] = []

    def start(self, launch: TaskLaunch) -> TaskHandle:
        executor_id = f"held-{launch.job_id}-{launch.task_attempt}"
        with self.lock:
            self.tasks[executor_id] = launch.labels
        return TaskHandle(executor_id, launch.ip)

    def poll(self, handle: TaskHandle) -> TaskStatus:
        with self.lock:
            if handle.executor_id not in self.tasks:
                return TaskStatus(running=False, lost=True, diagnostics="the task is gone")
        if not self.exited:
            return TaskStatus(running=True)
        return TaskStatus(running=False, exit_code=0, finished_at=timezone.now())

    def stop(self, handle: TaskHandle, *, keep: bool = False) -> None:
        with self.lock:
            if self.tasks.pop(handle.executor_id, None) is not None:
                self.removed.append(handle.executor_id)

    def list_running(self) -> list[RunningTask]:
        with self.lock:
            return [RunningTask(TaskHandle(executor_id), labels) for executor_id, labels in self.tasks.items()]


@pytest.fixture(scope="module")
def launched(django_db_setup, django_db_blocker, worker_work_root, tmp_path_factory) -> Iterator[HeldTasks]:
    """erin's JOBS one-task jobs running on one node, none exited yet: launched once for the module
    (`rows_for_module`; five scheduler passes were most of each test's CPU), each test's own
    transaction undoing what its passes wrote."""
    folder = tmp_path_factory.mktemp("exit-batches")
    overrides = {"PAI_WORK_ROOT": worker_work_root, "PAI_LOG_DIR": folder / "logs", "PAI_FS_ROOT": folder / "fs"}
    tasks = HeldTasks()

    def launch() -> HeldTasks:
        Node.objects.create(name="local", executor="process", cpus=2 * JOBS, memory_mb=2 * JOBS * 256)
        create_jobs(create_user("erin"), [f"batch-{i}" for i in range(JOBS)])
        scheduler = Scheduler(holder="test-scheduler")
        for _ in range(5):
            scheduler.run_once()
        assert Task.objects.filter(state=TaskState.RUNNING).exclude(executor_id="").count() == JOBS
        return tasks

    with override_settings(**overrides), mock.patch.object(executors, "node_executor", lambda node: tasks):
        yield from rows_for_module(django_db_blocker, launch)


@pytest.fixture
def held_tasks(launched, db, process_work_root, monkeypatch) -> HeldTasks:
    """The module's running tasks as the launch left them (none exited, none removed)."""
    tasks = HeldTasks()
    tasks.tasks = dict(launched.tasks)
    monkeypatch.setattr(executors, "node_executor", lambda node: tasks)
    return tasks


def assert_each_exit_recorded_once() -> None:
    assert set(Job.objects.values_list("state", flat=True)) == {JobState.SUCCEEDED}
    assert TaskAttempt.objects.count() == JOBS
    assert sorted(TaskAttempt.objects.values_list("job_id", flat=True)) == sorted(
        Job.objects.values_list("pk", flat=True)
    )
    assert JobEvent.objects.filter(kind="task-exit").count() == JOBS
    assert JobEvent.objects.filter(kind="succeeded").count() == JOBS


def test_it_records_fifty_exits_seen_in_one_pass_together_each_once(held_tasks, monkeypatch):
    one_by_one = []
    monkeypatch.setattr(lifecycle, "end_task", lambda *args, **kwargs: one_by_one.append(args))
    held_tasks.exited = True
    with CaptureQueriesContext(connection) as queries:
        Scheduler(holder="test-scheduler").run_once()
    assert one_by_one == []  # (none by itself)
    assert_each_exit_recorded_once()
    assert sorted(held_tasks.removed) == sorted(Task.objects.values_list("executor_id", flat=True))
    writes = [q["sql"] for q in queries.captured_queries if q["sql"].split(" ", 1)[0] in ("UPDATE", "INSERT")]
    # The tasks' UPDATE (run for each row by the database), their attempts, their events, the
    # jobs' UPDATE and their events: not a statement per exit.
    task_updates = [sql for sql in writes if sql.startswith('UPDATE "jobs_task"')]
    assert len(task_updates) <= 1 or len(set(task_updates)) == 1
    assert len([sql for sql in writes if sql.startswith('UPDATE "jobs_job"')]) <= 2
    assert len([sql for sql in writes if sql.startswith('INSERT INTO "jobs_jobevent"')]) <= 2


def test_a_crash_in_the_middle_of_the_batch_loses_no_exit_and_records_none_twice(held_tasks, monkeypatch):
    """The process dies inside the batch's transaction (after the tasks' UPDATE, before the jobs'):
    nothing of it is kept and nothing was removed; the restarted scheduler records each exit once."""
    real_succeed_all = lifecycle.succeed_all

    def crash(job_ids):
        raise SystemExit("killed in the middle of the batch")

    monkeypatch.setattr(lifecycle, "succeed_all", crash)
    held_tasks.exited = True
    crashed = Scheduler(holder="test-scheduler")
    with pytest.raises(SystemExit):
        crashed.run_once()
    assert Task.objects.filter(state=TaskState.RUNNING).count() == JOBS
    assert TaskAttempt.objects.count() == 0
    assert held_tasks.removed == []
    monkeypatch.setattr(lifecycle, "succeed_all", real_succeed_all)
    crashed.release_lease()  # (its lease ran out)
    restarted = Scheduler(holder="restarted")
    restarted.run_once()
    assert_each_exit_recorded_once()
    restarted.run_once()  # (a pass more records nothing again)
    assert_each_exit_recorded_once()


def test_a_batch_whose_write_fails_is_recorded_one_by_one(held_tasks, monkeypatch):
    """A batch the database refuses while it answers (a value past a limit in one of its rows)
    leaves every exit to be recorded by itself, in the same pass."""

    def refuse(ends):
        raise ValueError("one row the batch cannot write")

    monkeypatch.setattr(lifecycle, "end_tasks", refuse)
    held_tasks.exited = True
    Scheduler(holder="test-scheduler").run_once()
    assert_each_exit_recorded_once()
