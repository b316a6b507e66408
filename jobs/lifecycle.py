"""Every change of a job's or a task's state, one named function each.

Nothing else writes `Job.state` or `Task.state`. Each function is a conditional UPDATE naming the
from-states it accepts (jobs.states holds the diagram), so two schedulers, a user's click and a
crash-and-restart can race without a job going backwards or a task being started twice: the
loser's UPDATE matches no row and the function says so (False). Functions that write several
rows run in one transaction. Every ended task attempt is kept as a TaskAttempt. What a change makes
the portal send (mail, webhooks) is written into the outbox in the change's own transaction
(jobs.notifications): a crash loses no notice, a change rolled back sends none.

A run's start and end come from one clock, and it never ends before it starts (the models' check
constraints hold it): the engine's own pair when it reports both (TaskExit.started_at), the
portal's otherwise (its stamp of the start, its sight of the end); `run_times` decides.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any, cast

from django.db import connections, transaction
from django.db.models import F, Field, Q, QuerySet, Value
from django.db.models.functions import Coalesce, Greatest
from django.utils import timezone

from catalogue import Message
from catalogue.reasons import StoredParts
from jobs import notifications
from jobs.models import (
    Job,
    JobEvent,
    Task,
    TaskAttempt,
    exit_diagnostics_fields,
    pending_reason_fields,
    stored_diagnostics,
)
from jobs.protocol.timelimit import duration_text
from jobs.states import FINISHED_JOB_STATES, JOB_TRANSITIONS, TASK_TRANSITIONS, JobState, TaskState
from queries.prepared import ListOf, Prepared, PreparedInsert, PreparedUpdate

if TYPE_CHECKING:
    from clusters.models import VirtualCluster

NO_REASON = pending_reason_fields([])  # a job that waits no longer
# A job's ending record (Job.ending_*): none (a new attempt's), and done (its cause kept: why it ended).
NOT_ENDING: dict[str, Any] = {
    "ending_cause": "",
    "ending_by": None,
    "ending_reason": "",
    "ending_reason_message": {},
    "ending_deadline": None,
}
# The scheduler's writes of every job it starts and ends, compiled once (queries.prepared): Django
# built and compiled each anew, a third of the loop's CPU per trivial job (docs/performance.md).
_CLAIM_JOB = PreparedUpdate(
    lambda job_id: Job.objects.filter(
        ~Q(ending_cause=Job.Ending.STOP), pk=job_id, state__in=JOB_TRANSITIONS["claim_for_launch"][0]
    ),
    int,
    sets=("updated_at", "launched_at", "borrowed_from"),
    fixed={
        "state": JOB_TRANSITIONS["claim_for_launch"][1],
        "job_attempt": F("job_attempt") + 1,
        **NO_REASON,
        **NOT_ENDING,  # (a job that ended while being preempted, restarted: not ending now)
    },
)
_PLACEABLE_TASKS: Prepared[Task] = Prepared(
    lambda job_id: Task.objects.filter(job_id=job_id, state__in=TASK_TRANSITIONS["place_task"][0]), int
)
_PLACE_TASK = PreparedUpdate(
    lambda task_id: Task.objects.filter(pk=task_id, state__in=TASK_TRANSITIONS["place_task"][0]),
    int,
    sets=("node_id", "gpus", "ports"),
    fixed={
        "state": TASK_TRANSITIONS["place_task"][1],
        "attempt": 1,
        "executor_id": "",
        "exit_code": None,
        "user_exit_code": None,
        **exit_diagnostics_fields(None),
        "started_at": None,
        "finished_at": None,
    },
)
_SET_PENDING_REASON = PreparedUpdate(
    lambda job_ids: Job.objects.filter(pk__in=job_ids, state=JobState.WAITING), ListOf(int), sets=tuple(NO_REASON)
)
_SET_TASK_LAUNCH = PreparedUpdate(
    lambda task_id, attempt: Task.objects.filter(pk=task_id, attempt=attempt), int, int, sets=("ip", "log_path")
)
_RECORD_TASK_STARTED = PreparedUpdate(
    lambda task_id, attempt: Task.objects.filter(pk=task_id, attempt=attempt, state=TaskState.RUNNING, executor_id=""),
    int,
    int,
    sets=("executor_id", "ip", "started_at"),
    fixed={"finished_at": None},
)
_ENDING_TASKS: Prepared[tuple[int, int]] = Prepared(
    lambda task_ids: (
        Task.objects.select_for_update()
        .filter(pk__in=task_ids, state__in=TASK_TRANSITIONS["finish_task"][0])
        .values_list("pk", "attempt")
    ),
    ListOf(int),
)
_SUCCEEDING_JOBS: Prepared[int] = Prepared(
    lambda job_ids: (
        Job.objects.select_for_update()
        .filter(pk__in=job_ids, state__in=JOB_TRANSITIONS["succeed"][0])
        .values_list("pk", flat=True)
    ),
    ListOf(int),
)
_SUCCEED_JOBS = PreparedUpdate(
    lambda job_ids: Job.objects.filter(pk__in=job_ids, state__in=JOB_TRANSITIONS["succeed"][0]),
    ListOf(int),
    sets=("completed_at", "updated_at"),
    fixed={
        "state": JOB_TRANSITIONS["succeed"][1],
        "exit_code": 0,
        "user_exit_code": 0,
        **exit_diagnostics_fields(None),
    },
)
ENDED: dict[str, Any] = {"ending_by": None, "ending_reason": "", "ending_reason_message": {}, "ending_deadline": None}
PREEMPTIONS = (Job.Ending.PREEMPTION, Job.Ending.RECLAIM)


def ending_reason_fields(reason: Message | None) -> dict[str, Any]:
    """Why the portal itself asks a job to stop (None: a user's Stop, or none), in English and as its message."""
    return {"ending_reason": reason.text if reason else "", "ending_reason_message": reason.as_dict() if reason else {}}


@dataclass(frozen=True)
class Placement:
    """Where one task of a job runs: what placement decided, in the database's terms."""

    role: str
    index: int
    node_id: int
    gpus: list[int]
    ports: dict[str, list[int]]


@dataclass(frozen=True)
class TaskExit:
    """How a task attempt ended, as the exit spec classified it."""

    exit_code: int
    user_exit_code: int | None
    phrase: str  # the exit spec's name for the code ("Succeeded", "ContainerSigKillReceived"...)
    diagnostics: Message | None  # what the user reads (EXITED: "<phrase>: <why>"), None on success
    finished_at: datetime
    # The engine's start of the attempt, given only with its own finish (finished_at) when it
    # reports both; None: finished_at is the portal's, as the start it stamped.
    started_at: datetime | None = None


def run_times(stamped_start: datetime | None, exit: TaskExit) -> tuple[datetime | None, datetime]:
    """An ended attempt's (start, finish), from one clock and never running backwards: the
    engine's pair when the exit has it, else the portal's stamp of the start and its finish. A
    finish before its start (clocks stepped back, engines' clocks apart) ends at the start."""
    started = exit.started_at or stamped_start
    return started, max(exit.finished_at, started) if started is not None else exit.finished_at


def not_before_start(finished: datetime) -> Greatest:
    """`finished` for rows updated in bulk, raised to each row's own start where that is later."""
    return Greatest(Value(finished), Coalesce(F("started_at"), Value(finished)))


class RowsChanged(Exception):
    """Rows a batch had read and locked changed before its UPDATE (the batch rolls back whole)."""


class JobStateError(Exception):
    """A user's verb that does not apply to the job's current state (stop a finished job...)."""

    def __init__(self, message: Message) -> None:
        super().__init__(message.text)
        self.message = message

    def as_dicts(self) -> list[dict[str, Any]]:
        """The API's `errors` ([{field, message, code, params}], as a config's): no field at fault."""
        return [{"field": "", "message": self.message.text, **self.message.as_dict()}]


def event_row(job_id: int, kind: str, message: Message) -> JobEvent:
    """A timeline event, unsaved: its message in English (as the API answers it) and its code and
    parameters (each page shows it in its own language: web.templatetags.portal.event_text)."""
    return JobEvent(job_id=job_id, kind=kind, message=message.text, params=message.as_dict())


_EVENT_INSERT: PreparedInsert[JobEvent] = PreparedInsert(JobEvent)  # every event its job has: compiled once


def event(job_id: int, kind: str, message: Message) -> None:
    _EVENT_INSERT.insert(event_row(job_id, kind, message))


def _move_job(job_id: int, transition: str, extra_filter: Q | None = None, **fields: Any) -> bool:
    from_states, to_state = JOB_TRANSITIONS[transition]
    rows = Job.objects.filter(extra_filter or Q(), pk=job_id, state__in=from_states)
    return rows.update(state=to_state, updated_at=timezone.now(), **fields) == 1


def _task_states(transition: str) -> tuple[tuple[TaskState, ...], TaskState]:
    return TASK_TRANSITIONS[transition]


def reset_task_fields() -> dict[str, Any]:
    """A task as it was before its first placement (a restart or a whole-job retry)."""
    return {
        "state": _task_states("reset_task")[1],
        "attempt": 0,
        "retries": 0,
        "node": None,
        "executor_id": "",
        "ip": "",
        "ports": {},
        "gpus": [],
        "exit_code": None,
        "user_exit_code": None,
        **exit_diagnostics_fields(None),
        "started_at": None,
        "finished_at": None,
        "log_path": "",  # the ended attempt keeps its log (TaskAttempt); the next one writes its own
    }


def _exit_fields(task: Task, exit: TaskExit) -> dict[str, Any]:
    started, finished = run_times(task.started_at, exit)
    return {
        "exit_code": exit.exit_code,
        "user_exit_code": exit.user_exit_code,
        **exit_diagnostics_fields(exit.diagnostics),
        "started_at": started,
        "finished_at": finished,
    }


def _keep_attempts(tasks: list[Task], job_attempt: int, exit_by_task: dict[int, TaskExit]) -> None:
    """Keep the history row of each ended attempt (idempotent: a replay after a crash adds none)."""
    rows = []
    for task in tasks:
        if task.attempt == 0:
            continue  # never placed: no attempt to keep
        rows.append(
            TaskAttempt(
                job_id=task.job_id,
                job_attempt=job_attempt,
                role=task.role,
                index=task.index,
                attempt=task.attempt,
                node_name=task.node.name if task.node_id and task.node else "",
                executor_id=task.executor_id,
                ip=task.ip,
                ports=task.ports,
                gpus=task.gpus,
                log_path=task.log_path,
                **_exit_fields(task, exit_by_task[task.pk]),
            )
        )
    TaskAttempt.objects.bulk_create(rows, ignore_conflicts=True)


# ---- placing and starting ------------------------------------------------------------------


def claim_for_launch(
    job: Job,
    placements: list[Placement],
    where: str,
    borrowed_from: VirtualCluster | None = None,
    note: Message | None = None,
) -> list[Task] | None:
    """WAITING -> RUNNING with its tasks placed (attempt 1 each): the placed tasks, with their
    nodes; None if a stop or another scheduler got there first. `borrowed_from`: the lending VC
    whose idle quota it runs on (docs/admin/sharing.md, "Borrowing and reclaim"); `note`: why it
    started ahead of its VC's first waiting job (backfill), its event."""
    where_to = {(p.role, p.index): p for p in placements}
    with transaction.atomic():
        now = timezone.now()
        if not _CLAIM_JOB(job.pk, updated_at=now, launched_at=now, borrowed_from=borrowed_from):
            return None
        tasks = [task for task in _PLACEABLE_TASKS(job.pk) if (task.role, task.index) in where_to]
        for task in tasks:
            task.job = job
            placement = where_to[task.role, task.index]
            placed = {"node_id": placement.node_id, "gpus": placement.gpus, "ports": placement.ports}
            # (Django's bulk_update builds a CASE per field and row: slower than these for gangs.)
            _PLACE_TASK(task.pk, **placed)
            # (each its own empty diagnostics: the fixed values' dict is the compiled statement's)
            for field, value in {**_PLACE_TASK.fixed, **exit_diagnostics_fields(None), **placed}.items():
                setattr(task, field, value)
        event(job.pk, "placed", Message.of("event.placed", count=len(placements), where=where))
        if borrowed_from is not None:
            event(
                job.pk,
                "borrowed",
                Message.of("event.borrowed", vc=borrowed_from.name),
            )
        if note is not None:
            event(job.pk, "backfilled", note)
        notifications.job_changed(job.pk, "running")
    job.job_attempt += 1  # what the claim's F() expression made of it
    job.state = JobState.RUNNING
    return tasks


def set_priority_class(job: Job, name: str, number: int, by_name: str) -> bool:
    """A waiting job's class changed (its owner or an admin); False when it is no longer waiting."""
    with transaction.atomic():
        changed = (
            Job.objects.filter(pk=job.pk, state=JobState.WAITING).update(
                priority_class=name, priority=number, updated_at=timezone.now()
            )
        ) == 1
        if changed and job.priority_class != name:
            event(
                job.pk,
                "priority-changed",
                Message.of("event.priority_changed", old=job.priority_class, new=name, user=by_name),
            )
    return changed


def set_pending_reason(job_id: int, reason: Sequence[Message]) -> None:
    set_pending_reasons({job_id: reason})


def set_pending_reasons(reasons: Mapping[int, Sequence[Message]], stored: StoredParts | None = None) -> None:
    """Why each of these waiting jobs waits (job id -> its parts): one UPDATE per distinct reason,
    as a pass gives most of the queue the same few reasons (`stored`: the pass's, to work each
    message out once)."""
    stored = stored or StoredParts()
    by_reason: dict[tuple[str, ...], tuple[Sequence[Message], list[int]]] = {}
    for job_id, reason in reasons.items():
        by_reason.setdefault(stored.key(reason), (reason, []))[1].append(job_id)
    for reason, job_ids in by_reason.values():
        _SET_PENDING_REASON(job_ids, **pending_reason_fields(reason))


def release_held(job_ids: list[int]) -> bool:
    """Held jobs whose dependencies are all met join the queue (only while they still wait)."""
    if not job_ids:
        return False
    return bool(
        Job.objects.filter(pk__in=job_ids, held=True, state=JobState.WAITING).update(
            held=False, updated_at=timezone.now(), **NO_REASON
        )
    )


def set_task_launches(tasks: list[Task]) -> None:
    """Where the tasks about to start will be reached (ip) and log (log_path), recorded before
    the executor starts them, so a page or a reconcile after a crash finds both (all of them or
    none: a claimed task without an address is given its job's addresses again)."""
    with transaction.atomic():
        for task in tasks:
            _SET_TASK_LAUNCH(task.pk, task.attempt, ip=task.ip, log_path=task.log_path)


def record_tasks_started(started: list[tuple[Task, str, str, str, datetime]]) -> None:
    """The executor started these attempts ((task, executor id, ip, node name, when its start
    returned)): each recorded once (a replay or a stale attempt is a no-op), their events written
    together, with them or not at all (a start not recorded is adopted by reconcile, event and all)."""
    events = []
    with transaction.atomic():
        for task, executor_id, ip, node_name, when in started:
            if _RECORD_TASK_STARTED(task.pk, task.attempt, executor_id=executor_id, ip=ip or task.ip, started_at=when):
                events.append(event_row(task.job_id, "task-started", _started(task, node_name)))
        _EVENT_INSERT.insert_all(events)


def _started(task: Task, node_name: str) -> Message:
    return Message.of("event.task_started", task=f"{task.role}-{task.index}", node=node_name, attempt=task.attempt)


def adopt_task(task: Task, executor_id: str, node_name: str) -> bool:
    """Reconcile found this attempt running on `node_name` although its start was never recorded:
    recorded now, with the event its start would have written."""
    with transaction.atomic():
        adopted = (
            Task.objects.filter(pk=task.pk, attempt=task.attempt, state=TaskState.RUNNING, executor_id="").update(
                executor_id=executor_id, started_at=timezone.now(), finished_at=None
            )
            == 1
        )
        if adopted:
            event(task.job_id, "task-started", _started(task, node_name))
    return adopted


# ---- task exits ----------------------------------------------------------------------------


def end_task(task: Task, job_attempt: int, exit: TaskExit) -> bool:
    """RUNNING -> SUCCEEDED (exit 0) or FAILED, for this attempt only; the attempt is kept."""
    transition = "finish_task" if exit.exit_code == 0 else "fail_task"
    from_states, to_state = _task_states(transition)
    with transaction.atomic():
        ended = Task.objects.filter(pk=task.pk, attempt=task.attempt, state__in=from_states).update(
            state=to_state, **_exit_fields(task, exit)
        )
        if not ended:
            return False
        _keep_attempts([task], job_attempt, {task.pk: exit})
        event(
            task.job_id,
            "task-exit",
            Message.of("event.task_exited", task=f"{task.role}-{task.index}", code=exit.exit_code, phrase=exit.phrase),
        )
    return True


def end_tasks(ends: Sequence[tuple[Task, int, TaskExit]]) -> list[Task]:
    """end_task for many attempts at once (the exits one pass saw: (task, its job's attempt, how it
    ended)), in one transaction: one read of those still running as their rows say (locked where
    the database locks rows), one UPDATE statement for all of them (executemany), one INSERT of
    their kept attempts and one of their events. The tasks ended; a replay or a stale attempt is
    left out, as end_task leaves it."""
    from_states, _ = _task_states("finish_task")
    assert from_states == _task_states("fail_task")[0]
    if not ends:
        return []
    with transaction.atomic():
        attempts = dict(_ENDING_TASKS([task.pk for task, _, _ in ends]))
        ending = [
            (task, job_attempt, exit) for task, job_attempt, exit in ends if attempts.get(task.pk) == task.attempt
        ]
        if not ending:
            return []
        values = []
        for task, _, exit in ending:
            to_state = _task_states("finish_task" if exit.exit_code == 0 else "fail_task")[1]
            values.append({"state": to_state, **_exit_fields(task, exit), "pk": task.pk})
        if _update_each(Task, values, Q(state__in=from_states)) != len(ending):
            raise RowsChanged("tasks changed while their exits were written")
        for job_attempt in {job_attempt for _, job_attempt, _ in ending}:
            same = [(task, exit) for task, attempt, exit in ending if attempt == job_attempt]
            _keep_attempts([task for task, _ in same], job_attempt, {task.pk: exit for task, exit in same})
        _EVENT_INSERT.insert_all(
            [
                event_row(
                    task.job_id,
                    "task-exit",
                    Message.of(
                        "event.task_exited", task=f"{task.role}-{task.index}", code=exit.exit_code, phrase=exit.phrase
                    ),
                )
                for task, _, exit in ending
            ]
        )
    return [task for task, _, _ in ending]


def _update_each(model: type[Job] | type[Task], rows: list[dict[str, Any]], where: Q) -> int:
    """One UPDATE statement run for each row (executemany: the database's own loop, no statement
    built per row): `rows` are {field: value, ..., "pk": its key}, every row the same fields;
    `where` (plain column lookups) must hold too. The rows changed."""
    connection = connections[model.objects.db]
    meta = model._meta
    names = [name for name in rows[0] if name != "pk"]
    fields = [meta.get_field(name) for name in names]
    quote = connection.ops.quote_name
    assignments = ", ".join(f"{quote(cast(Field, field).column)} = %s" for field in fields)
    condition, params = _where_sql(model, where, connection)
    # (names the model's own, quoted; every value a parameter)
    sql = f"UPDATE {quote(meta.db_table)} SET {assignments} WHERE {quote(meta.pk.column)} = %s AND {condition}"  # noqa: S608
    prepared = [
        [
            *(
                cast(Field, field).get_db_prep_save(row[name], connection)
                for field, name in zip(fields, names, strict=True)
            ),
            row["pk"],
            *params,
        ]
        for row in rows
    ]
    with connection.cursor() as cursor:
        cursor.executemany(sql, prepared)
        return int(cursor.rowcount)


def _where_sql(model: type[Job] | type[Task], where: Q, connection: Any) -> tuple[str, list[Any]]:
    """`where`'s SQL and parameters, as a filter on the model's own table (no joins)."""
    query = model.objects.filter(where).query
    compiler = query.get_compiler(connection=connection)
    sql, params = query.where.as_sql(compiler, connection)
    return sql, list(params)


def retry_task(task: Task, job_attempt: int, exit: TaskExit, *, charged: bool) -> bool:
    """RUNNING -> RUNNING as the next attempt on the same node (taskRetryCount); the ended attempt
    is kept. A free (transient) retry is counted on the job instead."""
    from_states, _ = _task_states("retry_task")
    with transaction.atomic():
        retried = Task.objects.filter(pk=task.pk, attempt=task.attempt, state__in=from_states).update(
            attempt=F("attempt") + 1,
            retries=F("retries") + (1 if charged else 0),
            executor_id="",
            **_exit_fields(task, exit) | {"started_at": None, "finished_at": None},  # (kept: its TaskAttempt)
        )
        if not retried:
            return False
        _keep_attempts([task], job_attempt, {task.pk: exit})
        if not charged:
            Job.objects.filter(pk=task.job_id).update(transient_retries=F("transient_retries") + 1)
        retrying = "event.task_retry_charged" if charged else "event.task_retry_transient"
        event(
            task.job_id,
            "task-retry",
            Message.of(retrying, task=f"{task.role}-{task.index}", code=exit.exit_code, phrase=exit.phrase),
        )
    return True


def stop_tasks(
    job: Job,
    exit_code: int,
    *,
    diagnostics: Message | None = None,
    user_codes: dict[int, int | None] | None = None,
    tasks: list[Task] | None = None,
) -> None:
    """Every task still WAITING or RUNNING -> STOPPED with exit_code (-210 a user's stop, -220 the
    job completed around them, -1003 a preemption); the running attempts are kept, with the code
    each task's own process exited with when known (`user_codes` by task id). `tasks`: the job's
    tasks as the scheduler read them after recording its exits: with none active there, none is
    read again (a task becomes active only by the scheduler's own hand: a waiting job's claim, or a
    retry in place recorded before that read)."""
    from_states, to_state = _task_states("stop_task")
    if tasks is not None and not any(task.state in from_states for task in tasks):
        return  # (the common end: every task has exited already)
    now = timezone.now()
    active = list(job.tasks.filter(state__in=from_states).select_related("node"))
    if not active:  # (the common end: every task has exited already)
        return
    codes = user_codes or {}
    exits = {
        task.pk: TaskExit(
            exit_code=exit_code, user_exit_code=codes.get(task.pk), phrase="", diagnostics=diagnostics, finished_at=now
        )
        for task in active
    }
    _keep_attempts(active, job.job_attempt, exits)
    job.tasks.filter(state__in=from_states).update(
        state=to_state,
        exit_code=exit_code,
        **exit_diagnostics_fields(diagnostics),
        finished_at=not_before_start(now),
    )


# ---- ending gracefully: a stop, a time limit, a preemption or a reclaim (scheduling.terminating) ----


def begin_ending(job: Job, cause: str, deadline: datetime, grace_s: int, *, by: Job | None = None) -> bool:
    """A job's graceful end begins: its record (cause, by whom, `deadline`) is stored before its
    tasks get SIGTERM, so a scheduler restarted in the grace period keeps the end and its deadline.
    A Stop's job is STOPPING (lifecycle.begin_stopping, its cause set when it was asked); any other
    end takes a RUNNING job no end has begun on, which stays RUNNING, holding its room, until its
    tasks are gone. `by`: the job that preempts it (or reclaims its quota). False when the job is
    not there to end (another end began first, or it finished)."""
    if cause == Job.Ending.STOP:
        rows = Job.objects.filter(pk=job.pk, state=JobState.STOPPING, ending_cause=cause, ending_deadline__isnull=True)
        fields: dict[str, Any] = {}
    else:
        rows = Job.objects.filter(
            pk=job.pk, state=JobState.RUNNING, ending_cause__in=["", cause], ending_deadline__isnull=True
        )
        fields = {"ending_cause": cause, "ending_by": by}
    with transaction.atomic():
        marked = rows.update(ending_deadline=deadline, updated_at=timezone.now(), **fields) == 1
        if marked:
            _ending_began(job, cause, grace_s, by)
    return marked


def _ending_began(job: Job, cause: str, grace_s: int, by: Job | None) -> None:
    if cause == Job.Ending.STOP:
        event(job.pk, "stopping", Message.of("event.stopping", grace=grace_s))
    elif cause == Job.Ending.TIME_LIMIT:
        limit = duration_text(cast(int, job.time_limit_seconds))
        event(job.pk, "time-limit-grace", Message.of("event.time_limit_grace", limit=limit, grace=grace_s))
    else:
        assert by is not None
        preempted = "event.preempted_reclaim" if cause == Job.Ending.RECLAIM else "event.preempted"
        event(job.pk, "preempted", Message.of(preempted, job=by.full_name, vc=by.virtual_cluster.name, grace=grace_s))
        notifications.job_changed(
            job.pk,
            "preempted",
            Message.of("notice.preempted", job=by.full_name, vc=by.virtual_cluster.name, grace=grace_s),
        )


def requeue_preempted(job: Job, exit_code: int, phrase: str, user_codes: dict[int, int | None]) -> bool:
    """RUNNING -> WAITING once a preempted job's tasks are gone: its attempt ends with the
    preemption's code, and the job waits to run again free of charge (neither jobRetryCount nor
    the transient retries count it)."""
    by = (
        Job.objects.select_related("owner", "virtual_cluster").filter(pk=job.ending_by_id).first()
        if job.ending_by_id is not None
        else None
    )
    who = (
        Message.of("event.by_job", job=by.full_name, vc=by.virtual_cluster.name)
        if by
        else Message.of("event.by_higher")
    )
    note = (
        Message.of("reason.preempted_by", job=by.full_name, vc=by.virtual_cluster.name)
        if by
        else Message.of("reason.preempted_by_higher")
    )
    said = (
        Message.of("exit.preempted_by", job=by.full_name, vc=by.virtual_cluster.name)
        if by
        else Message.of("exit.preempted_by_higher")
    )
    with transaction.atomic():
        stop_tasks(
            job, exit_code, diagnostics=Message.of("exit.exited", phrase=phrase, said=said), user_codes=user_codes
        )
        requeued = _move_job(
            job.pk,
            "requeue_preempted",
            extra_filter=Q(ending_cause__in=PREEMPTIONS),
            preemptions=F("preemptions") + 1,
            **NOT_ENDING,
            **pending_reason_fields([note, Message.of("reason.run_again")]),
            launched_at=None,
            borrowed_from=None,
        )
        if not requeued:
            return False
        job.tasks.update(**reset_task_fields())
        event(
            job.pk,
            "requeued",
            Message.of("event.requeued", who=who),
        )
        # (OpenPAI retries a preempted job: its clients hear `retried`.)
        notifications.job_changed(job.pk, "retried", Message.of("notice.requeued", who=who))
    return True


# ---- job outcomes --------------------------------------------------------------------------


def request_stop(job: Job, by_name: str) -> None:
    """The user's Stop: the scheduler carries it out (begin_stopping / finish_stopping)."""
    _request_stop(job, "stop-requested", Message.of("event.stop_requested", user=by_name))


def request_idle_stop(job: Job, app_kind: str, minutes: str) -> None:
    """The portal's own Stop of a job whose interactive app stayed idle: carried out as a user's,
    the reason kept for its end's diagnostics."""
    _request_stop(
        job,
        "idle-stop",
        Message.of("event.idle_stop", app=app_kind, minutes=minutes),
        stop_reason=Message.of("exit.stop.idle", app=app_kind, minutes=minutes),
    )


def request_alert_stop(job: Job, rule: str) -> None:
    """An alert rule's stop (scheduling.alerts), after its warning's grace."""
    _request_stop(
        job,
        "alert-stop",
        Message.of("event.alert_stop", rule=rule),
        stop_reason=Message.of("exit.stop.alert", rule=rule),
    )


def request_pruned_stop(job: Job, reason: Message) -> None:
    """An adaptive search's pruner's stop (jobs.sweep_search): SIGTERM and its grace as a user's
    Stop; the reason, its code one of texts.PRUNED_CODES, tells the run was pruned."""
    _request_stop(job, "pruned", Message.of("event.pruned", why=reason), stop_reason=reason)


def _request_stop(job: Job, kind: str, message: Message, stop_reason: Message | None = None) -> None:
    with transaction.atomic():
        updated = (
            Job.objects.filter(pk=job.pk)
            .exclude(state__in=FINISHED_JOB_STATES)
            .update(
                ending_cause=Job.Ending.STOP,
                ending_by=None,
                **ending_reason_fields(stop_reason),
                updated_at=timezone.now(),
            )
        )
        if not updated:
            raise JobStateError(Message.of("job_state.already_finished", job=job.full_name, state=str(job.state)))
        event(job.pk, kind, message)


def request_stops(jobs: QuerySet[Job], by_name: str) -> int:
    """The user's Stop of many jobs at once (a sweep's Stop all, the job list's bulk stop): one
    INSERT of their events and one UPDATE, however many jobs; those finished already are left as
    they are. Returns how many were asked to stop."""
    asked = Job.objects.filter(pk__in=jobs.order_by().values("pk")).exclude(state__in=FINISHED_JOB_STATES)
    with transaction.atomic():
        _event_for_each(asked, "stop-requested", Message.of("event.stop_requested", user=by_name))
        return asked.update(
            ending_cause=Job.Ending.STOP, ending_by=None, **ending_reason_fields(None), updated_at=timezone.now()
        )


def _event_for_each(jobs: QuerySet[Job], kind: str, message: Message) -> None:
    """The same timeline event for every job of `jobs`, in one INSERT ... SELECT: no row is built
    here (a sweep's Stop all writes 10,000)."""
    row = event_row(0, kind, message)
    connection = connections[Job.objects.db]
    quote = connection.ops.quote_name
    fields = {name: JobEvent._meta.get_field(name) for name in ("job", "created_at", "kind", "message", "params")}
    constants = {"created_at": timezone.now(), "kind": row.kind, "message": row.message, "params": row.params}
    prepared = [cast(Field, fields[name]).get_db_prep_save(value, connection) for name, value in constants.items()]
    columns = ", ".join(quote(cast(Field, field).column) for field in fields.values())
    picked_sql, picked_params = jobs.order_by().values("pk").query.sql_with_params()
    # (Names from the models, quoted; every value a parameter.)
    sql = (
        f"INSERT INTO {quote(JobEvent._meta.db_table)} ({columns}) "  # noqa: S608
        f"SELECT picked.*, {', '.join(['%s'] * len(constants))} FROM ({picked_sql}) picked"
    )
    with connection.cursor() as cursor:
        cursor.execute(sql, [*prepared, *picked_params])


def begin_stopping(job: Job) -> bool:
    return _move_job(job.pk, "begin_stopping")


def stop_unstarted(jobs: dict[int, str], exit_code: int, diagnostics: Mapping[str, Message]) -> list[int]:
    """Many WAITING jobs asked to stop, STOPPED together: they never started (or wait again, their
    last attempt's tasks gone), so nothing needs a signal or removing. begin_stopping and
    finish_stopping for all their rows in one transaction, their tasks with them. `jobs`: id ->
    its ending_reason; `diagnostics`: ending_reason -> the job's exit diagnostics. Returns the ids
    stopped (a job claimed meanwhile is not)."""
    begin_from, stopping = JOB_TRANSITIONS["begin_stopping"]
    _, stopped = JOB_TRANSITIONS["finish_stopping"]
    task_from, task_to = _task_states("stop_task")
    assert JobState.WAITING in begin_from
    now = timezone.now()
    with transaction.atomic():
        Job.objects.filter(pk__in=list(jobs), state=JobState.WAITING).update(state=stopping, updated_at=now)
        # (Those of `jobs` now STOPPING are this call's: they were waiting, and only this phase begins stops.)
        moved = list(Job.objects.filter(pk__in=list(jobs), state=stopping).values_list("pk", flat=True))
        tasks = Task.objects.filter(job_id__in=moved, state__in=task_from)
        ran = list(tasks.filter(attempt__gt=0).select_related("node", "job"))  # (none, as a rule: kept all the same)
        if ran:
            exit = TaskExit(exit_code=exit_code, user_exit_code=None, phrase="", diagnostics=None, finished_at=now)
            for job_attempt in {task.job.job_attempt for task in ran}:
                same = [task for task in ran if task.job.job_attempt == job_attempt]
                _keep_attempts(same, job_attempt, {task.pk: exit for task in same})
        tasks.update(state=task_to, exit_code=exit_code, **exit_diagnostics_fields(None), finished_at=now)
        for reason in {jobs[pk] for pk in moved}:
            Job.objects.filter(pk__in=[pk for pk in moved if jobs[pk] == reason], state=stopping).update(
                state=stopped,
                exit_code=exit_code,
                **exit_diagnostics_fields(diagnostics[reason]),
                completed_at=now,
                updated_at=now,
                **NO_REASON,
                **ENDED,
            )
        _event_for_each(Job.objects.filter(pk__in=moved), "stopped", Message.of("event.stopped"))
        notifications.jobs_ended(moved)  # (in the change's transaction: see jobs.notifications)
    return moved


def finish_stopping(
    job: Job, exit_code: int, diagnostics: Message, user_codes: dict[int, int | None] | None = None
) -> bool:
    """STOPPING -> STOPPED once the scheduler has stopped every task (`user_codes`: what each
    task's own process exited with in its grace period, where seen)."""
    with transaction.atomic():
        stop_tasks(job, exit_code, user_codes=user_codes)
        stopped = _move_job(
            job.pk,
            "finish_stopping",
            exit_code=exit_code,
            **exit_diagnostics_fields(diagnostics),
            completed_at=timezone.now(),
            **NO_REASON,
            **ENDED,
        )
        if stopped:
            event(job.pk, "stopped", Message.of("event.stopped"))
            notifications.job_ended(job.pk)
    return stopped


def succeed(job: Job, leftover_exit_code: int, *, tasks: list[Task] | None = None) -> bool:
    """RUNNING -> SUCCEEDED; tasks still running are stopped with leftover_exit_code (-220)
    (`tasks`: as stop_tasks reads them)."""
    with transaction.atomic():
        stop_tasks(job, leftover_exit_code, tasks=tasks)
        done = _move_job(
            job.pk,
            "succeed",
            exit_code=0,
            user_exit_code=0,
            **exit_diagnostics_fields(None),
            completed_at=timezone.now(),
        )
        if done:
            event(job.pk, "succeeded", Message.of("event.succeeded"))
            notifications.job_ended(job.pk)
    return done


def succeed_all(job_ids: Sequence[int]) -> list[int]:
    """succeed for many RUNNING jobs whose tasks have all ended (the completions one pass's exits
    made): one transaction, one UPDATE of their rows, one INSERT of their events, their notices.
    The jobs succeeded (one that left RUNNING meanwhile is left out, as succeed leaves it)."""
    if not job_ids:
        return []
    with transaction.atomic():
        moving = _SUCCEEDING_JOBS(list(job_ids))
        if not moving:
            return []
        now = timezone.now()
        if _SUCCEED_JOBS(moving, completed_at=now, updated_at=now) != len(moving):
            raise RowsChanged("jobs changed while their ends were written")
        _EVENT_INSERT.insert_all([event_row(pk, "succeeded", Message.of("event.succeeded")) for pk in moving])
        notifications.jobs_ended(moving)
    return moving


def fail(job: Job, trigger: Task, leftover_exit_code: int, *, tasks: list[Task] | None = None) -> bool:
    """RUNNING -> FAILED because of trigger's exit; tasks still running are stopped (`tasks`: as
    stop_tasks reads them)."""
    said = stored_diagnostics(trigger)
    with transaction.atomic():
        stop_tasks(job, leftover_exit_code, tasks=tasks)
        done = _move_job(
            job.pk,
            "fail",
            exit_code=trigger.exit_code,
            user_exit_code=trigger.user_exit_code,
            **exit_diagnostics_fields(
                Message.of("exit.task", task=f"{trigger.role}-{trigger.index}", diagnostics=said) if said else None
            ),
            completed_at=timezone.now(),
        )
        if done:
            event(
                job.pk,
                "failed",
                Message.of("event.failed", task=f"{trigger.role}-{trigger.index}", code=cast(int, trigger.exit_code)),
            )
            notifications.job_ended(job.pk)
    return done


def refuse(job: Job, exit_code: int, reason: Message) -> bool:
    """WAITING -> FAILED: the backend that would run it refuses the job as asked, for good (Slurm's
    "Requested node configuration is not available", a dependency never met); its tasks never
    started. `reason` is why, kept as the job's diagnostics."""
    with transaction.atomic():
        done = _move_job(
            job.pk,
            "refuse",
            exit_code=exit_code,
            user_exit_code=None,
            **exit_diagnostics_fields(reason),
            completed_at=timezone.now(),
            **NO_REASON,
        )
        if done:
            _, to_state = _task_states("stop_task")
            job.tasks.filter(state=TaskState.WAITING).update(
                state=to_state, exit_code=exit_code, **exit_diagnostics_fields(reason), finished_at=timezone.now()
            )
            event(job.pk, "refused", Message.of("event.refused", reason=reason))
            notifications.job_ended(job.pk)
    return done


def end_at_time_limit(
    job: Job, exit_code: int, phrase: str, limit_text: str, user_codes: dict[int, int | None] | None = None
) -> bool:
    """RUNNING -> FAILED (the `fail` transition) because the job reached its time limit: every
    task still running is stopped with exit_code (-1230, `phrase`), which is also the job's; each
    attempt keeps what its own process exited with in its grace, where seen (`user_codes`). Not
    once a Stop was asked meanwhile: the stop ends it."""
    with transaction.atomic():
        stop_tasks(job, exit_code, user_codes=user_codes)
        done = _move_job(
            job.pk,
            "fail",
            Q(ending_cause__in=["", Job.Ending.TIME_LIMIT]),
            exit_code=exit_code,
            user_exit_code=None,
            **exit_diagnostics_fields(
                Message.of("exit.exited", phrase=phrase, said=Message.of("exit.time_limit", limit=limit_text))
            ),
            completed_at=timezone.now(),
            ending_cause=Job.Ending.TIME_LIMIT,
            **ENDED,
        )
        if done:
            event(
                job.pk,
                "time-limit",
                Message.of("event.time_limit", limit=limit_text, code=exit_code),
            )
            notifications.job_ended(job.pk)
    return done


def requeue_for_retry(
    job: Job, trigger: Task, *, charged: bool, leftover_exit_code: int, tasks: list[Task] | None = None
) -> bool:
    """RUNNING -> WAITING for a whole-job retry (jobRetryCount, or free when transient; `tasks`:
    as stop_tasks reads them)."""
    with transaction.atomic():
        stop_tasks(job, leftover_exit_code, tasks=tasks)
        requeued = _move_job(
            job.pk,
            "requeue_for_retry",
            retries_used=F("retries_used") + (1 if charged else 0),
            transient_retries=F("transient_retries") + (0 if charged else 1),
            **pending_reason_fields([Message.of("reason.retry")]),
            borrowed_from=None,
            launched_at=None,  # the next attempt's launch; the ended one's times are in its TaskAttempts
        )
        if not requeued:
            return False
        job.tasks.update(**reset_task_fields())
        retrying = "event.job_retry_charged" if charged else "event.job_retry_transient"
        event(
            job.pk,
            "job-retry",
            Message.of(retrying, task=f"{trigger.role}-{trigger.index}", code=cast(int, trigger.exit_code)),
        )
        notifications.job_changed(job.pk, "retried")
    return True


def restart(job: Job, by_name: str) -> None:
    """START on a finished job: back to the queue as a new attempt, with fresh retry counts."""
    with transaction.atomic():
        restarted = _move_job(
            job.pk,
            "restart",
            retries_used=0,
            transient_retries=0,
            **NO_REASON,
            exit_code=None,
            user_exit_code=None,
            **exit_diagnostics_fields(None),
            launched_at=None,  # a clean waiting job: the previous run's times are in its TaskAttempts
            completed_at=None,
            **NOT_ENDING,
            files_removed_at=None,  # (the next run writes new ones)
            # (its dependencies and its sweep's cap are judged again)
            held=job.dependencies.exists() or (job.sweep is not None and job.sweep.max_concurrent is not None),
        )
        if not restarted:
            raise JobStateError(Message.of("job_state.not_finished", job=job.full_name, state=str(job.state)))
        job.tasks.update(**reset_task_fields())
        event(job.pk, "restarted", Message.of("event.restarted", user=by_name))
