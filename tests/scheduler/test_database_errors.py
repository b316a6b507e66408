"""A database error during a pass fails no job: the pass stops, the loop closes the connection and
runs the pass again after a short wait, and each task's exit is recorded once (scheduling/guard.py,
Scheduler.run_pass). A job whose own share keeps raising one while the database answers still fails
alone, as any poison job does."""

from __future__ import annotations

import math
import random
import threading
import time
from collections.abc import Callable, Iterator

import psycopg
import pytest
from django.db import InterfaceError, OperationalError, connection
from django.utils import timezone

from clusters.executors.base import (
    Executor,
    ExecutorError,
    Failure,
    RunningTask,
    TaskHandle,
    TaskLaunch,
    TaskStatus,
)
from clusters.models import VirtualCluster
from jobs import lifecycle
from jobs.models import Job, JobEvent, JobState, Task, TaskAttempt
from jobs.protocol.exitspec import ExitCode
from jobs.states import FINISHED_JOB_STATES
from scheduling import ending, executors
from scheduling import launch as launch_builder
from scheduling.guard import OWN_DATABASE_ERRORS
from scheduling.scheduler import Scheduler
from tests.conftest import TERMINATE_OTHER_SESSIONS
from tests.factories import create_jobs, normalized_spec

JOBS = 100


class InstantTasks(Executor):
    """Starts nothing: a task has exited 0 by its first poll. A task stopped is gone, as a removed
    container is: polled again, it is lost (so an exit whose task was removed before the exit was
    recorded would be recorded as a lost task)."""

    def __init__(self) -> None:
        self.lock = threading.Lock()  # (starts run side by side)
        self.tasks: dict[str, dict[str, str]] = {}  # executor id -> labels
        self.starts: list[str] = []  # the jobs' names, once per start asked for

    def start(self, launch: TaskLaunch) -> TaskHandle:
        with self.lock:
            self.starts.append(launch.job_name.split("~")[1])
        if launch.job_name.endswith("~unstartable"):
            raise ExecutorError("no such image", Failure.IMAGE_NOT_FOUND)
        executor_id = f"instant-{launch.job_id}-{launch.role}-{launch.index}-{launch.task_attempt}"
        with self.lock:
            self.tasks[executor_id] = launch.labels
        return TaskHandle(executor_id, launch.ip)

    def poll(self, handle: TaskHandle) -> TaskStatus:
        with self.lock:
            held = handle.executor_id in self.tasks
        if not held:
            return TaskStatus(running=False, lost=True, failure=Failure.TASK_GONE, diagnostics="the task is gone")
        return TaskStatus(running=False, exit_code=0, finished_at=timezone.now())

    def stop(self, handle: TaskHandle, *, keep: bool = False) -> None:
        with self.lock:
            self.tasks.pop(handle.executor_id, None)

    def list_running(self) -> list[RunningTask]:
        with self.lock:
            return [RunningTask(TaskHandle(executor_id), labels) for executor_id, labels in self.tasks.items()]


@pytest.fixture
def instant_tasks(process_node, monkeypatch) -> InstantTasks:
    """Room for every job at once, on a node whose tasks end at once."""
    process_node.cpus, process_node.memory_mb = JOBS, JOBS * 256
    process_node.save(update_fields=["cpus", "memory_mb"])
    tasks = InstantTasks()
    monkeypatch.setattr(executors, "node_executor", lambda node: tasks)
    return tasks


@pytest.fixture
def end_task_refused_once(monkeypatch) -> list[str]:
    """The first exit's write fails as it did when the server closed the connection."""
    refused = list[str]()

    def refusing_once(real):
        def write(*args, **kwargs):
            if not refused:
                refused.append("refused")
                raise OperationalError("consuming input failed: server closed the connection unexpectedly")
            return real(*args, **kwargs)

        return write

    # (one exit by itself, or a pass's exits together)
    monkeypatch.setattr(lifecycle, "end_task", refusing_once(lifecycle.end_task))
    monkeypatch.setattr(lifecycle, "end_tasks", refusing_once(lifecycle.end_tasks))
    return refused


def database_answer(query: Callable[[], bool]) -> bool:
    """The test's own reads share the scheduler's connection: one the sweep closed is opened again."""
    try:
        return query()
    except (OperationalError, InterfaceError):
        connection.close()
        return False


def run_passes(scheduler: Scheduler, done: Callable[[], bool], timeout: float = 60.0) -> None:
    """Passes as the loop runs them (`run_pass`: a failed one is waited out and run again)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        scheduler.run_pass()
        if database_answer(done):
            return
        time.sleep(0.01)
    raise AssertionError("the jobs did not end in time")


def all_final() -> bool:
    return not Job.objects.exclude(state__in=FINISHED_JOB_STATES).exists()


def assert_each_exit_recorded_once() -> None:
    """Every job succeeded with its one task's first attempt, whose exit was recorded once."""
    jobs = Job.objects.all()
    assert {job.state for job in jobs} == {JobState.SUCCEEDED}, [
        (job.name, job.exit_code, job.exit_diagnostics) for job in jobs if job.state != JobState.SUCCEEDED
    ][:3]
    assert sorted(TaskAttempt.objects.values_list("job__name", "attempt")) == sorted((job.name, 1) for job in jobs)
    assert JobEvent.objects.filter(kind="task-exit").count() == len(jobs)


def test_a_failed_database_write_of_an_exit_is_retried_with_the_pass_not_charged_to_the_job(
    user, instant_tasks, end_task_refused_once
):
    create_jobs(user, ["lucky"])
    run_passes(Scheduler(holder="test-scheduler"), all_final)
    assert end_task_refused_once == ["refused"]
    assert_each_exit_recorded_once()


def test_a_failed_start_whose_record_the_database_failed_is_recorded_not_started_again(
    user, instant_tasks, end_task_refused_once
):
    create_jobs(user, ["unstartable"])
    run_passes(Scheduler(holder="test-scheduler"), all_final)
    job = Job.objects.get()
    assert (job.state, job.exit_code) == (JobState.FAILED, ExitCode.IMAGE_NOT_FOUND)
    assert instant_tasks.starts == ["unstartable"]


def test_a_job_whose_own_share_keeps_raising_a_database_error_fails_alone(user, instant_tasks, monkeypatch):
    """While the connection answers, the same job's database error pass after pass is its own (a
    value past a database limit): it fails alone, and the others end as they should."""
    create_jobs(user, ["poison", "after"])
    real_decide_exit, raised = ending.decide_exit, list[int]()

    def decide_exit(task, *args, **kwargs):
        if task.job.name == "poison":
            raised.append(task.pk)
            raise OperationalError("index row size 2720 exceeds btree version 4 maximum 2704")
        return real_decide_exit(task, *args, **kwargs)

    monkeypatch.setattr(ending, "decide_exit", decide_exit)
    run_passes(Scheduler(holder="test-scheduler"), all_final)
    poison, after = Job.objects.get(name="poison"), Job.objects.get(name="after")
    assert (poison.state, poison.exit_code) == (JobState.FAILED, ExitCode.CONTAINER_START_FAILED)
    assert "OperationalError: index row size" in poison.exit_diagnostics
    assert len(raised) == OWN_DATABASE_ERRORS
    assert after.state == JobState.SUCCEEDED


# --- a start the database failed: the pass runs again, the task starts once -----------------------

KILLED = "terminating connection due to administrator command"


def refuse_first_call(monkeypatch, owner: object, name: str, error: str = KILLED) -> list[str]:
    """`owner.name`'s first call raises the error a killed connection gives; what it refused."""
    real, refused = getattr(owner, name), list[str]()

    def refusing(*args, **kwargs):
        if not refused:
            refused.append("refused")
            raise OperationalError(error)
        return real(*args, **kwargs)

    monkeypatch.setattr(owner, name, refusing)
    return refused


@pytest.mark.parametrize(
    "owner, name",
    [(lifecycle, "set_task_launches"), (launch_builder, "build_launch")],
    ids=["recording-its-address", "reading-what-it-launches"],
)
def test_a_database_error_before_a_start_is_retried_with_the_pass_not_charged_to_the_job(
    user, instant_tasks, monkeypatch, owner, name
):
    refused = refuse_first_call(monkeypatch, owner, name)
    create_jobs(user, ["lucky", "neighbour"])
    run_passes(Scheduler(holder="test-scheduler"), all_final)
    assert refused == ["refused"]
    assert_each_exit_recorded_once()
    assert sorted(instant_tasks.starts) == ["lucky", "neighbour"]


def test_tasks_whose_addresses_the_database_did_not_record_start_with_the_same_addresses_after_it(
    user, instant_tasks, monkeypatch
):
    """The pass stopped between asking the node for the job's addresses and recording them: the
    next one asks again, and every task starts with its own address and its job-mates' (host lists)."""
    addresses = {("worker", 0): "10.7.0.2", ("worker", 1): "10.7.0.3"}
    monkeypatch.setattr(instant_tasks, "job_network", lambda job_id, job_name, tasks: {t: addresses[t] for t in tasks})
    launches, real_start = list[TaskLaunch](), instant_tasks.start

    def start(launch: TaskLaunch) -> TaskHandle:
        launches.append(launch)
        return real_start(launch)

    monkeypatch.setattr(instant_tasks, "start", start)
    refused = refuse_first_call(monkeypatch, lifecycle, "set_task_launches")
    job = Job.objects.create(
        owner=user,
        name="pair",
        spec=normalized_spec("pair", {"worker": 2}),
        virtual_cluster=VirtualCluster.objects.get_or_create(name="default")[0],
    )
    Task.objects.bulk_create([Task(job=job, role="worker", index=index) for index in (0, 1)])
    run_passes(Scheduler(holder="test-scheduler"), all_final)
    assert refused == ["refused"]
    assert Job.objects.get().state == JobState.SUCCEEDED
    assert sorted((launch.index, launch.ip) for launch in launches) == [(0, "10.7.0.2"), (1, "10.7.0.3")]
    for launch in launches:
        assert (launch.env["PAI_HOST_IP_worker_0"], launch.env["PAI_HOST_IP_worker_1"]) == ("10.7.0.2", "10.7.0.3")
    assert sorted(Task.objects.values_list("ip", flat=True)) == ["10.7.0.2", "10.7.0.3"]


def test_a_task_started_whose_start_the_database_did_not_record_is_adopted_not_started_again(
    user, instant_tasks, monkeypatch
):
    refused = refuse_first_call(monkeypatch, lifecycle, "record_tasks_started")
    create_jobs(user, ["lucky"])
    run_passes(Scheduler(holder="test-scheduler"), all_final)
    assert refused == ["refused"]
    assert_each_exit_recorded_once()
    assert instant_tasks.starts == ["lucky"]


def test_a_task_it_adopts_gets_the_started_event_its_unrecorded_start_did_not_write(user, instant_tasks, monkeypatch):
    refuse_first_call(monkeypatch, lifecycle, "record_tasks_started")
    create_jobs(user, ["lucky"])
    run_passes(Scheduler(holder="test-scheduler"), all_final)
    assert JobEvent.objects.filter(kind="task-started").count() == 1


def test_a_database_error_on_a_starts_own_thread_is_retried_with_the_pass_not_charged_to_the_job(
    user, instant_tasks, monkeypatch
):
    refused = refuse_first_call(monkeypatch, instant_tasks, "start")
    create_jobs(user, ["lucky"])
    run_passes(Scheduler(holder="test-scheduler"), all_final)
    assert refused == ["refused"]
    assert_each_exit_recorded_once()
    assert instant_tasks.starts == ["lucky"]  # (the refused call never reached the engine)


def test_a_job_whose_launch_keeps_raising_a_database_error_fails_alone_as_a_start_that_failed(
    user, instant_tasks, monkeypatch
):
    create_jobs(user, ["poison", "after"])
    real_build_launch, raised = launch_builder.build_launch, list[int]()

    def build_launch(job, task, *args, **kwargs):
        if job.name == "poison":
            raised.append(task.pk)
            raise OperationalError("value too long for type character varying(255)")
        return real_build_launch(job, task, *args, **kwargs)

    monkeypatch.setattr(launch_builder, "build_launch", build_launch)
    run_passes(Scheduler(holder="test-scheduler"), all_final)
    poison, after = Job.objects.get(name="poison"), Job.objects.get(name="after")
    assert (poison.state, poison.exit_code) == (JobState.FAILED, ExitCode.CONTAINER_START_FAILED)
    assert "value too long" in poison.exit_diagnostics
    assert len(raised) == OWN_DATABASE_ERRORS
    assert instant_tasks.starts == ["after"]
    assert after.state == JobState.SUCCEEDED


def test_a_job_whose_starts_keep_raising_a_database_error_fails_alone_after_as_many_passes(
    user, instant_tasks, monkeypatch
):
    """Judged once a pass for the job, however many of its tasks' starts raised it."""
    job = Job.objects.create(
        owner=user,
        name="poison",
        spec=normalized_spec("poison", {"worker": 2}),
        virtual_cluster=VirtualCluster.objects.get_or_create(name="default")[0],
    )
    Task.objects.bulk_create([Task(job=job, role="worker", index=index) for index in (0, 1)])
    raised = list[int]()

    def start(launch: TaskLaunch) -> TaskHandle:
        raised.append(launch.index)
        raise OperationalError("value too long for type character varying(255)")

    monkeypatch.setattr(instant_tasks, "start", start)
    run_passes(Scheduler(holder="test-scheduler"), all_final)
    job.refresh_from_db()
    assert (job.state, job.exit_code) == (JobState.FAILED, ExitCode.CONTAINER_START_FAILED)
    assert "value too long" in job.exit_diagnostics
    assert sorted(raised) == sorted([0, 1] * OWN_DATABASE_ERRORS)


# --- the portal's PostgreSQL connections killed while jobs end -----------------------------------


@pytest.fixture
def connection_sweeps(postgresql_admin) -> Iterator[Callable[[], list[int]]]:
    """A thread of the test's own connection that kills every other connection to the test database
    (the scheduler's) each time a few more exits or job ends were recorded, and every 0.2-0.5 s
    while they are being recorded (a pass records a pass's exits together: progress alone moves in
    a few large steps). Calling it stops the sweeps (before the test reads the database itself):
    how many connections each killed."""
    admin, killed, stop = postgresql_admin, list[int](), threading.Event()
    all_ended = 2 * JOBS  # (an exit and a job's end each, one task a job)

    def sweep() -> None:
        progress = (  # exits recorded, jobs ended
            "SELECT (SELECT count(*) FROM jobs_taskattempt) + (SELECT count(*) FROM jobs_job WHERE state = ANY(%s))"
        )
        next_sweep, next_at = random.randint(2, 6), math.inf
        while not stop.is_set():
            row = admin.execute(progress, [list(FINISHED_JOB_STATES)]).fetchone()
            done = row[0] if row else 0
            if done >= next_sweep or (0 < done < all_ended and time.monotonic() >= next_at):
                count = admin.execute(TERMINATE_OTHER_SESSIONS).fetchone()
                killed.append(count[0] if count else 0)
                next_sweep, next_at = done + random.randint(1, 5), time.monotonic() + random.uniform(0.2, 0.5)
            time.sleep(0.01)

    def stopped() -> list[int]:
        stop.set()
        thread.join(timeout=10)
        connection.close()  # (the last sweep may have killed it after the test's last read)
        return killed

    thread = threading.Thread(target=sweep, daemon=True)
    thread.start()
    try:
        yield stopped
    finally:
        stopped()


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_killing_the_portals_postgresql_connections_while_jobs_end_fails_no_job(user, instant_tasks, connection_sweeps):
    create_jobs(user, [f"ending-{i}" for i in range(JOBS)])
    run_passes(Scheduler(holder="test-scheduler"), all_final, timeout=120)
    killed = connection_sweeps()
    assert sum(killed) >= 3, killed  # (the scheduler's connection, killed again and again)
    assert_each_exit_recorded_once()


# --- ... and while tasks start --------------------------------------------------------------------


def kill_the_connection_before(monkeypatch, admin: psycopg.Connection, owner: object, name: str) -> list[int]:
    """`owner.name`'s first call finds the scheduler's connection killed: how many it killed."""
    real, killed = getattr(owner, name), list[int]()

    def after_a_kill(*args, **kwargs):
        if not killed:
            row = admin.execute(TERMINATE_OTHER_SESSIONS).fetchone()
            killed.append(row[0] if row else 0)
        return real(*args, **kwargs)

    monkeypatch.setattr(owner, name, after_a_kill)
    return killed


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize(
    "owner, name",
    [(launch_builder, "build_launch"), (lifecycle, "set_task_launches"), (lifecycle, "record_tasks_started")],
    ids=["before-its-launch", "before-recording-its-address", "after-the-engine-started-it"],
)
def test_killing_the_portals_postgresql_connection_while_tasks_start_fails_no_job_and_starts_none_twice(
    user, instant_tasks, postgresql_admin, monkeypatch, owner, name
):
    killed = kill_the_connection_before(monkeypatch, postgresql_admin, owner, name)
    create_jobs(user, ["lucky", "neighbour"])
    run_passes(Scheduler(holder="test-scheduler"), all_final)
    assert killed and killed[0] >= 1, killed
    assert_each_exit_recorded_once()
    assert sorted(instant_tasks.starts) == ["lucky", "neighbour"]
