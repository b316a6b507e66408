"""The job and task state diagram (jobs.states), walked through jobs.lifecycle: every allowed
transition happens, every other one is refused and leaves the row as it was."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest
from django.utils import timezone

from catalogue import Message
from clusters.models import Node, VirtualCluster
from jobs import lifecycle
from jobs.lifecycle import JobStateError, Placement, TaskExit
from jobs.models import Job, Task, TaskAttempt
from jobs.states import JOB_TRANSITIONS, TASK_TRANSITIONS, JobState, TaskState
from tests.conftest import rows_for_module
from tests.factories import create_user, normalized_spec

pytestmark = pytest.mark.django_db


@pytest.fixture(scope="module")
def owner_vc_node(django_db_setup, django_db_blocker) -> Iterator[tuple[Any, VirtualCluster, Node]]:
    """alice, the `default` VC and node n1, made once for the module's ~100 transitions
    (`rows_for_module`): each test's job, and what its transition writes, its transaction undoes."""

    def make() -> tuple[Any, VirtualCluster, Node]:
        return (
            create_user("alice"),
            VirtualCluster.objects.get_or_create(name="default", defaults={"share_percent": 100})[0],
            Node.objects.create(name="n1", executor="process", cpus=8, memory_mb=8192),
        )

    yield from rows_for_module(django_db_blocker, make)


@pytest.fixture
def user(owner_vc_node):
    return owner_vc_node[0]


@pytest.fixture
def job_in(owner_vc_node) -> Callable[[str], Job]:
    user, default_vc, node = owner_vc_node

    def make(state: str) -> Job:
        job = Job.objects.create(
            owner=user,
            name=f"job-{state.lower()}",
            state=state,
            virtual_cluster=default_vc,
            config_text="x",
            spec=normalized_spec("j", {"worker": 1}),
            job_attempt=1,
        )
        task_state = TaskState.RUNNING if state in (JobState.RUNNING, JobState.STOPPING) else TaskState.WAITING
        Task.objects.create(job=job, role="worker", index=0, state=task_state, node=node, attempt=1)
        return job

    return make


def an_exit(code: int = 1) -> TaskExit:
    why = Message.of("exit.exited", phrase="P", said=Message.of("exit.said", said="why"))
    return TaskExit(exit_code=code, user_exit_code=code, phrase="P", diagnostics=why, finished_at=timezone.now())


def _claim(job: Job) -> bool:
    node_id = job.tasks.get().node_id
    assert node_id is not None
    placed = lifecycle.claim_for_launch(job, [Placement("worker", 0, node_id, [], {"ssh": [20000]})], where="n1")
    return placed is not None


def _refused_as_false_or_error(call: Callable[[], Any]) -> bool:
    try:
        result = call()
    except JobStateError:
        return False
    return result is not False


JOB_CALLS: dict[str, Callable[[Job], Any]] = {
    "claim_for_launch": _claim,
    "begin_stopping": lifecycle.begin_stopping,
    "finish_stopping": lambda job: lifecycle.finish_stopping(
        job, -210, Message.of("exit.exited", phrase="P", said=Message.of("exit.stopped_by_user"))
    ),
    "succeed": lambda job: lifecycle.succeed(job, -220),
    "fail": lambda job: lifecycle.fail(job, job.tasks.get(), -220),
    "refuse": lambda job: lifecycle.refuse(job, -1100, Message.of("exit.said", said="Slurm refuses the job (x): y.")),
    "requeue_for_retry": lambda job: lifecycle.requeue_for_retry(
        job, job.tasks.get(), charged=True, leftover_exit_code=-220
    ),
    "requeue_preempted": lambda job: _preempted(job),
    "restart": lambda job: lifecycle.restart(job, "alice"),
}


def _preempted(job: Job) -> bool:
    """A job whose preemption began (its deadline stored), requeued once its tasks are gone."""
    Job.objects.filter(pk=job.pk).update(ending_cause=Job.Ending.PREEMPTION, ending_deadline=timezone.now())
    return lifecycle.requeue_preempted(job, -1003, "PodPreemptedForCriticalPod", {})


def _placed(job: Job) -> None:
    _claim(job)  # (its answer is the job's claim: whether this task was placed shows in its row)


# Each task transition through the lifecycle function that makes it, on a job in the state that
# function expects; None where the function's answer is not about this one task.
TASK_CALLS: dict[str, tuple[JobState, Callable[[Job, Task], bool | None]]] = {
    "place_task": (JobState.WAITING, lambda job, task: _placed(job)),
    "retry_task": (JobState.RUNNING, lambda job, task: lifecycle.retry_task(task, 1, an_exit(1), charged=True)),
    "finish_task": (JobState.RUNNING, lambda job, task: lifecycle.end_task(task, 1, an_exit(0))),
    "fail_task": (JobState.RUNNING, lambda job, task: lifecycle.end_task(task, 1, an_exit(3))),
    "stop_task": (JobState.RUNNING, lambda job, task: lifecycle.stop_tasks(job, -210)),
    "reset_task": (JobState.FAILED, lambda job, task: lifecycle.restart(job, "alice")),
}


def test_it_has_a_function_for_every_transition_of_the_diagram():
    assert set(JOB_CALLS) == set(JOB_TRANSITIONS)
    assert all(hasattr(lifecycle, name) for name in JOB_TRANSITIONS)
    assert set(TASK_CALLS) == set(TASK_TRANSITIONS)


@pytest.mark.parametrize("transition", sorted(JOB_TRANSITIONS))
@pytest.mark.parametrize("state", list(JobState))
def test_it_allows_exactly_the_job_transitions_of_the_diagram(job_in, transition, state):
    from_states, to_state = JOB_TRANSITIONS[transition]
    job = job_in(state)
    done = _refused_as_false_or_error(lambda: JOB_CALLS[transition](job))
    job.refresh_from_db()
    if state in from_states:
        assert (done, job.state) == (True, to_state)
    else:
        assert (done, job.state) == (False, state)


def task_row(task: Task) -> tuple[Any, ...]:
    return Task.objects.values_list("state", "attempt", "exit_code", "node_id", "finished_at").get(pk=task.pk)


@pytest.mark.parametrize("transition", sorted(TASK_TRANSITIONS))
@pytest.mark.parametrize("state", list(TaskState))
def test_it_allows_exactly_the_task_transitions_of_the_diagram(job_in, transition, state):
    from_states, to_state = TASK_TRANSITIONS[transition]
    job_state, call = TASK_CALLS[transition]
    job = job_in(job_state)
    Task.objects.filter(job=job).update(state=state)
    task = job.tasks.select_related("node").get()
    before = task_row(task)
    answer = call(job, task)
    after = task_row(task)
    moved = after != before
    assert answer in (None, moved)
    if state in from_states:
        assert (moved, after[0]) == (True, to_state)
    else:
        assert after == before


@pytest.mark.parametrize("state", list(JobState))
def test_it_ends_only_a_running_job_at_its_time_limit(job_in, state):
    job = job_in(state)
    done = lifecycle.end_at_time_limit(job, -1230, "JobMaxRunTimeExceeded", "3 s")
    job.refresh_from_db()
    if state == JobState.RUNNING:
        assert (done, job.state, job.exit_code) == (True, JobState.FAILED, -1230)
        assert job.tasks.get().state == TaskState.STOPPED
    else:
        assert (done, job.state) == (False, state)


def test_it_refuses_a_stop_request_on_a_finished_job(job_in):
    with pytest.raises(JobStateError) as refused:
        lifecycle.request_stop(job_in(JobState.SUCCEEDED), "alice")
    assert refused.value.message.code == "job_state.already_finished"


def test_it_refuses_to_restart_a_job_that_has_not_finished(job_in):
    with pytest.raises(JobStateError) as refused:
        lifecycle.restart(job_in(JobState.RUNNING), "alice")
    assert refused.value.message.code == "job_state.not_finished"


def test_it_ends_only_the_attempt_it_was_given(job_in):
    task = job_in(JobState.RUNNING).tasks.get()
    Task.objects.filter(pk=task.pk).update(attempt=2)
    assert lifecycle.end_task(task, 1, an_exit(0)) is False


def test_it_keeps_every_ended_attempt(job_in):
    job = job_in(JobState.RUNNING)
    task = job.tasks.select_related("node").get()
    assert lifecycle.retry_task(task, 1, an_exit(1), charged=True)
    task.refresh_from_db()
    assert lifecycle.end_task(task, 1, an_exit(0))
    attempts = list(TaskAttempt.objects.filter(job=job).values_list("attempt", "exit_code", "node_name"))
    assert attempts == [(1, 1, "n1"), (2, 0, "n1")]


def test_it_keeps_an_attempt_once_when_a_crash_replays_it(job_in):
    job = job_in(JobState.RUNNING)
    task = job.tasks.get()
    lifecycle.end_task(task, 1, an_exit(1))
    lifecycle.stop_tasks(job, -220)  # the task already ended: nothing more to keep
    assert TaskAttempt.objects.filter(job=job).count() == 1


def test_it_reads_no_task_again_to_stop_when_the_tasks_it_was_given_have_all_ended(job_in, django_assert_num_queries):
    job = job_in(JobState.RUNNING)
    task = job.tasks.get()
    lifecycle.end_task(task, 1, an_exit(0))
    ended = list(job.tasks.all())
    with django_assert_num_queries(0):
        lifecycle.stop_tasks(job, -220, tasks=ended)
    assert job.tasks.get().state == TaskState.SUCCEEDED


def test_it_resets_every_task_on_restart(job_in):
    job = job_in(JobState.FAILED)
    Task.objects.filter(job=job).update(state=TaskState.FAILED, exit_code=1, executor_id="c1", gpus=[0])
    lifecycle.restart(job, "alice")
    task = job.tasks.get()
    assert (task.state, task.exit_code, task.executor_id, task.gpus, task.node_id, task.attempt) == (
        TaskState.WAITING,
        None,
        "",
        [],
        None,
        0,
    )
