"""The completion policy: when finished tasks end the job (FrameworkController's rules)."""

import pytest

from jobs.protocol.completion import job_outcome
from jobs.states import JobState

SUCCEEDED, FAILED = JobState.SUCCEEDED, JobState.FAILED


def spec(roles, kill_all=None):
    extras = {"v1": {"killAllOnCompletedTaskNumber": kill_all}} if kill_all is not None else {}
    return {
        "taskRoles": {
            name: {"instances": n, "completion": {"minFailedInstances": mf, "minSucceededInstances": ms}}
            for name, (n, mf, ms) in roles.items()
        },
        "extras": extras,
    }


def test_it_keeps_going_while_tasks_run():
    assert job_outcome(spec({"w": (2, 1, None)}), [("w", "SUCCEEDED"), ("w", "RUNNING")]) is None


def test_it_fails_the_job_at_min_failed_instances():
    assert job_outcome(spec({"w": (3, 1, None)}), [("w", "FAILED"), ("w", "RUNNING"), ("w", "RUNNING")]) == FAILED


def test_it_succeeds_the_job_at_min_succeeded_instances_of_any_role():
    roles = {"ps": (1, 1, None), "worker": (2, 1, 2)}
    states = [("ps", "RUNNING"), ("worker", "SUCCEEDED"), ("worker", "SUCCEEDED")]
    assert job_outcome(spec(roles), states) == SUCCEEDED


def test_it_succeeds_when_every_task_completed_without_a_trigger():
    states = [("w", "FAILED"), ("w", "SUCCEEDED")]
    assert job_outcome(spec({"w": (2, None, None)}), states) == SUCCEEDED


def test_it_checks_failures_before_successes():
    states = [("w", "FAILED"), ("w", "SUCCEEDED")]
    assert job_outcome(spec({"w": (2, 1, 1)}), states) == FAILED


@pytest.mark.parametrize(
    ("states", "expected"),
    [
        ([("w", "SUCCEEDED"), ("w", "RUNNING"), ("w", "RUNNING")], SUCCEEDED),
        ([("w", "RUNNING"), ("w", "RUNNING"), ("w", "RUNNING")], None),
    ],
)
def test_it_ends_the_job_at_kill_all_on_completed_task_number(states, expected):
    assert job_outcome(spec({"w": (3, None, None)}, kill_all=1), states) == expected
