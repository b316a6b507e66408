"""The job and task state machines: the states and every allowed transition, as data.

`jobs.lifecycle` is the only module that changes a state, and each of its functions names the
from-states it accepts; tests/lifecycle/test_lifecycle.py walks every transition from every state.
The pure protocol modules (completion policy) import the state names from here, never spelled out
again. The diagram in docs/architecture.md is `state_diagram()`'s text (`manage.py statediagram`),
kept equal by a test: it is never drawn by hand.
"""

from collections.abc import Mapping, Sequence

from django.db.models import TextChoices
from django.utils.translation import gettext_lazy as _

# Labels (the admin shows them) in the page's language; the values are OpenPAI's state names.


class JobState(TextChoices):
    WAITING = "WAITING", _("Waiting")
    RUNNING = "RUNNING", _("Running")
    STOPPING = "STOPPING", _("Stopping")
    STOPPED = "STOPPED", _("Stopped")
    SUCCEEDED = "SUCCEEDED", _("Succeeded")
    FAILED = "FAILED", _("Failed")


class TaskState(TextChoices):
    WAITING = "WAITING", _("Waiting")
    RUNNING = "RUNNING", _("Running")
    SUCCEEDED = "SUCCEEDED", _("Succeeded")
    FAILED = "FAILED", _("Failed")
    STOPPED = "STOPPED", _("Stopped")


FINISHED_JOB_STATES = (JobState.STOPPED, JobState.SUCCEEDED, JobState.FAILED)
ACTIVE_TASK_STATES = (TaskState.WAITING, TaskState.RUNNING)
# A task that ran to its end (the completion policy counts these).
COMPLETED_TASK_STATES = (TaskState.SUCCEEDED, TaskState.FAILED)

# transition name -> (from-states, to-state). jobs.lifecycle implements exactly these.
JOB_TRANSITIONS: dict[str, tuple[tuple[JobState, ...], JobState]] = {
    "claim_for_launch": ((JobState.WAITING,), JobState.RUNNING),
    "begin_stopping": ((JobState.WAITING, JobState.RUNNING, JobState.STOPPING), JobState.STOPPING),
    "finish_stopping": ((JobState.STOPPING,), JobState.STOPPED),
    "succeed": ((JobState.RUNNING,), JobState.SUCCEEDED),
    "fail": ((JobState.RUNNING,), JobState.FAILED),
    "refuse": ((JobState.WAITING,), JobState.FAILED),
    "requeue_for_retry": ((JobState.RUNNING,), JobState.WAITING),
    "requeue_preempted": ((JobState.RUNNING,), JobState.WAITING),
    "restart": (FINISHED_JOB_STATES, JobState.WAITING),
}

TASK_TRANSITIONS: dict[str, tuple[tuple[TaskState, ...], TaskState]] = {
    "place_task": ((TaskState.WAITING,), TaskState.RUNNING),
    "retry_task": ((TaskState.RUNNING,), TaskState.RUNNING),
    "finish_task": ((TaskState.RUNNING,), TaskState.SUCCEEDED),
    "fail_task": ((TaskState.RUNNING,), TaskState.FAILED),
    "stop_task": (ACTIVE_TASK_STATES, TaskState.STOPPED),
    "reset_task": (tuple(TaskState), TaskState.WAITING),
}


def state_diagram() -> str:
    """Every allowed move as `FROM --transition--> TO`, job then task, grouped by from-state in
    the order the states are declared (the text docs/architecture.md shows)."""
    return _machine("job", list(JobState), JOB_TRANSITIONS) + _machine("task", list(TaskState), TASK_TRANSITIONS)


def _machine(kind: str, states: Sequence[str], transitions: Mapping[str, tuple[tuple[str, ...], str]]) -> str:
    moves = [
        (str(state), f"--{name}-->", str(to_state))
        for state in states
        for name, (from_states, to_state) in transitions.items()
        if state in from_states
    ]
    state_width = max(len(state) for state, _, _ in moves)
    arrow_width = max(len(arrow) for _, arrow, _ in moves)
    lines = [f"{kind}:"]
    lines += [f"  {state:<{state_width}}  {arrow:<{arrow_width}}  {to_state}" for state, arrow, to_state in moves]
    return "\n".join(lines) + "\n"
