"""The dependency pass: each held job (WAITING for other jobs, jobs.dependencies) is let into
the queue once every job it waits for has ended as it needs, ended FAILED once one has ended
otherwise (its dependency can never be met), and meanwhile told which jobs it waits for.
Cheap when no job is held: one indexed query."""

from __future__ import annotations

from collections import defaultdict

from jobs import lifecycle
from jobs.models import Job, JobDependency, JobState
from jobs.protocol.dependencies import never_reason, verdict, waiting_reason
from jobs.protocol.exitspec import ExitCode


def judge_held_jobs() -> bool:
    """One pass over the held jobs. True when one was let go or ended (placement looks again)."""
    held = dict(Job.objects.filter(held=True, state=JobState.WAITING).values_list("pk", "pending_reason"))
    if not held:
        return False
    waits: dict[int, list[tuple[str, str, str]]] = defaultdict(list)  # job -> (kind, user~name, state)
    for job_id, kind, owner, name, state in JobDependency.objects.filter(job_id__in=held).values_list(
        "job_id", "kind", "depends_on__owner__username", "depends_on__name", "depends_on__state"
    ):
        waits[job_id].append((kind, f"{owner}~{name}", state))
    released: list[int] = []
    reasons: dict[int, str] = {}
    ended = False
    for job_id, said in held.items():
        judged = [(verdict(kind, state), kind, name, state) for kind, name, state in waits[job_id]]
        never = [(kind, name, state) for outcome, kind, name, state in judged if outcome == "never"]
        if never:
            job = Job.objects.get(pk=job_id)
            ended |= lifecycle.refuse(job, ExitCode.CREATE_FRAMEWORK_PERMANENT_FAILED, never_reason(*never[0]))
            continue
        waiting = [waiting_reason(kind, name, state) for outcome, kind, name, state in judged if outcome == "waiting"]
        if not waiting:
            released.append(job_id)
        elif "; ".join(waiting) != said:
            reasons[job_id] = "; ".join(waiting)
    lifecycle.set_pending_reasons(reasons)
    return lifecycle.release_held(released) or ended
