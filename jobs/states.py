"""The job and task state machines: the states and every allowed transition, as data.

`jobs.lifecycle` is the only module that changes a state, and each of its functions names the
from-states it accepts; tests/jobs/test_lifecycle.py walks this diagram. The pure protocol
modules (completion policy) import the state names from here, never spelled out again.

    submit ──> WAITING ──claim──> RUNNING ──all done / policy──> SUCCEEDED | FAILED
                 ^  │                │  │
                 │  │ stop           │  └─retry (job retry)──> WAITING
                 │  v                v stop
                 │ STOPPING <────────┘
                 │  │
                 │  v
                 │ STOPPED
                 └──── restart (from STOPPED, SUCCEEDED, FAILED)
"""

from django.db.models import TextChoices


class JobState(TextChoices):
    WAITING = "WAITING"
    RUNNING = "RUNNING"
    STOPPING = "STOPPING"
    STOPPED = "STOPPED"
    SUCCEEDED = "SUCCEEDED"
    FAILED = "FAILED"


class TaskState(TextChoices):
    WAITING = "WAITING"
    RUNNING = "RUNNING"
    SUCCEEDED = "SUCCEEDED"
    FAILED = "FAILED"
    STOPPED = "STOPPED"


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
    "requeue_for_retry": ((JobState.RUNNING,), JobState.WAITING),
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
