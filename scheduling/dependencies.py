"""The dependency pass: each held job (WAITING for other jobs, jobs.dependencies, or for a slot of
its sweep, jobs.sweeps) is let into the queue once every job it waits for has ended as it needs
and its sweep runs fewer than its `maxConcurrent`; ended FAILED once a dependency has ended
otherwise (it can never be met); and meanwhile told what it waits for. Cheap when no job is
held: one indexed query."""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from django.db.models import Count

from catalogue import Message
from catalogue.reasons import Reason, stored_parts
from jobs import lifecycle
from jobs.models import Job, JobDependency, JobState, Sweep
from jobs.protocol.dependencies import never_reason, verdict
from jobs.protocol.exitspec import ExitCode
from jobs.states import FINISHED_JOB_STATES
from queries.prepared import Prepared
from scheduling.texts import DEPENDENCY

HELD_COLUMNS = ("pk", "pending_reason_messages", "sweep_id", "sweep_index")
Said = list[dict[str, Any]]  # a held job's reason as stored
# The held jobs not asked to stop (read every pass: its SQL compiled once).
_HELD: Prepared[tuple[Any, ...]] = Prepared(
    lambda: (
        Job.objects.filter(held=True, state=JobState.WAITING)
        .exclude(ending_cause=Job.Ending.STOP)
        .values_list(*HELD_COLUMNS)
    )
)


def judge_held_jobs() -> bool:
    """One pass over the held jobs. True when one was let go or ended (placement looks again)."""
    # (A held job asked to stop waits for nothing: the stop phase ends it.)
    held = _HELD()
    if not held:
        return False
    waits: dict[int, list[tuple[str, str, str]]] = defaultdict(list)  # job -> (kind, user~name, state)
    for job_id, kind, owner, name, state in JobDependency.objects.filter(
        job_id__in=[row[0] for row in held]
    ).values_list("job_id", "kind", "depends_on__owner__username", "depends_on__name", "depends_on__state"):
        waits[job_id].append((kind, f"{owner}~{name}", state))
    ready: list[tuple[int, Said, int | None, int | None]] = []
    reasons: dict[int, Reason] = {}
    ended = False
    for job_id, said, sweep_id, index in held:
        judged = [(verdict(kind, state), kind, name, state) for kind, name, state in waits[job_id]]
        never = [(kind, name, state) for outcome, kind, name, state in judged if outcome == "never"]
        if never:
            job = Job.objects.get(pk=job_id)
            ended |= lifecycle.refuse(job, ExitCode.CREATE_FRAMEWORK_PERMANENT_FAILED, never_reason(*never[0]))
            continue
        waiting = [waiting_reason(kind, name, state) for outcome, kind, name, state in judged if outcome == "waiting"]
        if waiting:
            if stored_parts(waiting) != said:
                reasons[job_id] = waiting
        else:
            ready.append((job_id, said, sweep_id, index))
    released, slot_reasons = _within_sweep_caps(ready)
    reasons.update(slot_reasons)
    lifecycle.set_pending_reasons(reasons)
    return lifecycle.release_held(released) or ended


def waiting_reason(kind: str, job_name: str, state: str) -> Message:
    """`waiting for job alice~prep to succeed (afterok; it is RUNNING)`."""
    return DEPENDENCY[kind](job=job_name, state=state)


def _within_sweep_caps(ready: list[tuple[int, Said, int | None, int | None]]) -> tuple[list[int], dict[int, Reason]]:
    """Of the jobs whose dependencies are met, those their sweep's cap lets run now (by run index),
    and why each other one waits."""
    capped = {row[2] for row in ready if row[2] is not None}
    sweeps = {sweep.pk: sweep for sweep in Sweep.objects.filter(pk__in=capped, max_concurrent__isnull=False)}
    active = dict(
        Job.objects.filter(sweep_id__in=sweeps, held=False)
        .exclude(state__in=FINISHED_JOB_STATES)
        .values("sweep_id")
        .annotate(count=Count("pk"))
        .values_list("sweep_id", "count")
    )
    released: list[int] = []
    reasons: dict[int, Reason] = {}
    for job_id, said, sweep_id, _index in sorted(ready, key=lambda row: (row[2] or 0, row[3] or 0)):
        sweep = sweeps.get(sweep_id) if sweep_id is not None else None
        if sweep is None or sweep.max_concurrent is None:  # (no cap: read with max_concurrent set)
            released.append(job_id)
            continue
        running = active.get(sweep.pk, 0)
        if running < sweep.max_concurrent:
            released.append(job_id)
            active[sweep.pk] = running + 1
        else:
            reason = [Message.of("reason.sweep_slot", sweep=sweep.name, cap=sweep.max_concurrent, now=running)]
            if stored_parts(reason) != said:
                reasons[job_id] = reason
    return released, reasons
