"""The job completion policy (pure): when do finished tasks end the whole job, and how.

OpenPAI follows FrameworkController's rules: a task role's minFailedInstances failures fail the job;
its minSucceededInstances successes succeed it (any role triggers); v1's
killAllOnCompletedTaskNumber ends the job after that many completed tasks; and when every task has
completed without a trigger the job has succeeded.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable

from jobs.protocol.spec import NormalizedSpec
from jobs.states import JobState, TaskState


def job_outcome(spec: NormalizedSpec, task_states: Iterable[tuple[str, str]]) -> JobState | None:
    """SUCCEEDED, FAILED or None (the job goes on), from (role, task state) pairs."""
    states = list(task_states)
    failed = Counter(role for role, state in states if state == TaskState.FAILED)
    succeeded = Counter(role for role, state in states if state == TaskState.SUCCEEDED)
    roles = spec["taskRoles"]
    for role, role_spec in roles.items():
        min_failed = role_spec["completion"].get("minFailedInstances")
        if min_failed is not None and min_failed > 0 and failed[role] >= min_failed:
            return JobState.FAILED
    for role, role_spec in roles.items():
        min_succeeded = role_spec["completion"].get("minSucceededInstances")
        if min_succeeded is not None and min_succeeded > 0 and succeeded[role] >= min_succeeded:
            return JobState.SUCCEEDED
    completed = sum(failed.values()) + sum(succeeded.values())
    kill_all_at = ((spec.get("extras") or {}).get("v1") or {}).get("killAllOnCompletedTaskNumber")
    if kill_all_at and completed >= kill_all_at:
        return JobState.FAILED if failed else JobState.SUCCEEDED
    if states and completed == len(states):
        return JobState.SUCCEEDED
    return None
