"""Jobs in OpenPAI's JSON shapes (rest-server v2 `GET /api/v2/jobs[/<user>~<job>]`).

Times are epoch milliseconds; `containerPorts` is `{label: "p1,p2"}`; `containerGpus` is
OpenPAI's GPU bitmask (bit i set = GPU i); `containerLog` is a signed URL serving the log.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from datetime import datetime
from typing import Any, NamedTuple

from django.db.models import BigIntegerField, Func, QuerySet
from django.http import HttpResponse
from django.utils import timezone
from rest_framework.utils.encoders import JSONEncoder as DrfJSONEncoder

from jobs.models import Job, JobEvent, JobState, JobTag, Task, diagnostics_messages
from jobs.protocol.exitspec import spec_row
from jobs.protocol.limits import spec_totals
from queries.prepared import Prepared
from scheduling.sharing import queue_place
from web.fixes import fix_for

# OpenPAI's framework sub-states, close enough for clients that display them.
SUB_STATES: dict[str, str] = {
    JobState.WAITING: "FRAMEWORK_WAITING",
    JobState.RUNNING: "APPLICATION_RUNNING",
    JobState.STOPPING: "APPLICATION_STOPPING",
    JobState.STOPPED: "FRAMEWORK_COMPLETED",
    JobState.SUCCEEDED: "FRAMEWORK_COMPLETED",
    JobState.FAILED: "FRAMEWORK_COMPLETED",
}


def epoch_ms(moment: datetime | None) -> int | None:
    return int(moment.timestamp() * 1000) if moment else None


class EpochMs(Func):
    """epoch_ms() of a datetime column, computed by the database: parsing 3,000 datetimes into
    Python objects only to turn them into numbers was a fifth of a 1000-row list. Truncated to the
    millisecond as epoch_ms() does. SQLite holds Django's datetimes as 'YYYY-MM-DD HH:MM:SS[.ffffff]'
    in UTC."""

    output_field = BigIntegerField()
    template = "FLOOR(EXTRACT(EPOCH FROM %(expressions)s) * 1000)::bigint"

    def get_db_converters(self, connection: Any) -> list[Any]:
        """None: both databases give an integer (or NULL) already, and Django's int() of each of a
        1000-row list's 4,000 values, with the converter loop around it, was a tenth of the list."""
        return []

    def as_sqlite(self, compiler: Any, connection: Any, **extra: Any) -> Any:
        seconds = "CAST(strftime('%%%%s', %(expressions)s) AS INTEGER)"
        template = f"({seconds} * 1000 + CAST(substr(%(expressions)s, 21, 3) AS INTEGER))"
        return self.as_sql(compiler, connection, template=template, **extra)


def gpu_bitmask(indices: Iterable[int]) -> int:
    mask = 0
    for index in indices or []:
        mask |= 1 << int(index)
    return mask


def ports_by_label(ports: dict[str, list[int]] | None) -> dict[str, str]:
    return {label: ",".join(str(port) for port in numbers) for label, numbers in (ports or {}).items()}


def exit_spec_row(code: int | None) -> dict[str, Any] | None:
    if code is None:
        return None
    return spec_row(code)


def retry_details(job: Job | dict[str, Any]) -> dict[str, Any]:
    get = job.get if isinstance(job, dict) else lambda key: getattr(job, key)
    return {"user": get("retries_used"), "platform": get("transient_retries"), "resource": 0}


def tags_by_job(page: QuerySet[Job]) -> dict[int, tuple[str, ...]]:
    """The tags of a page of jobs, in one query, each job's in the order they were added. The page
    goes in as a subquery: a list of 1000 ids cost Django about 5 ms to prepare, a third of the
    whole 1000-row list. (JobTag's own ordering would join the jobs again to sort by theirs.)"""
    return tags_of_rows(tags_query(page))


def tags_query(page: QuerySet[Job]) -> QuerySet[Any]:
    """(job id, tag) of a page of jobs, each job's in the order they were added."""
    return JobTag.objects.filter(job__in=page.values("pk")).order_by("id").values_list("job_id", "name")


def tags_of_rows(found: Iterable[tuple[int, str]]) -> dict[int, tuple[str, ...]]:
    tags: dict[int, list[str]] = {}
    for job_id, name in found:
        tags.setdefault(job_id, []).append(name)
    return {job_id: tuple(names) for job_id, names in tags.items()}


class SpecSummary(NamedTuple):
    """What the job list shows of a job's spec."""

    role_count: int
    task_count: int
    gpu_count: int


class SpecSummaries:
    """SpecSummary by job, each computed once per server process: a spec never changes after
    submit, and reading and decoding 1000 specs was most of a 1000-row list's time. A job is known
    by its id and submission time (a database may give an id again, as tests' rollbacks do)."""

    LIMIT = 200_000  # past this many, start over (a few MB per process)
    READ_BATCH = 1000

    def __init__(self) -> None:
        self._known: dict[tuple[int, int], SpecSummary] = {}

    def get_many(self, jobs: list[tuple[int, int]]) -> dict[tuple[int, int], SpecSummary]:
        """By (job id, submission time in epoch ms)."""
        missing = [job_id for job_id, submitted in jobs if (job_id, submitted) not in self._known]
        if len(self._known) + len(missing) > self.LIMIT:
            self._known = {}
        found = {job: self._known[job] for job in jobs if job in self._known}
        for start in range(0, len(missing), self.READ_BATCH):  # (SQLite caps the parameters of a query)
            batch = Job.objects.filter(pk__in=missing[start : start + self.READ_BATCH])
            for job_id, submitted, spec in batch.values_list("pk", SUMMARY_TIMES["created_ms"], "spec"):
                summary = SpecSummary(*spec_totals(spec))
                found[job_id, submitted] = self._known[job_id, submitted] = summary
        return found


spec_summaries = SpecSummaries()


# A job list row: these columns, then the times (`summary_row`), as one tuple each (`values()`'
# dicts cost a tenth of a 1000-row list).
SUMMARY_FIELDS = (
    "id",
    "priority_class",
    "name",
    "owner__username",
    "state",
    "ending_cause",
    "retries_used",
    "transient_retries",
    "exit_code",
    "virtual_cluster__name",
)
SUMMARY_TIMES = {
    "created_ms": EpochMs("created_at"),
    "launched_ms": EpochMs("launched_at"),
    "completed_ms": EpochMs("completed_at"),
    "expected_start_ms": EpochMs("expected_start_at"),
}
SUMMARY_CREATED_MS = len(SUMMARY_FIELDS)  # where a row's submission time is
STOP_ASKED = str(Job.Ending.STOP)
EXECUTION_STOP, EXECUTION_START = str(Job.ExecutionType.STOP), str(Job.ExecutionType.START)


def summary_rows(page: QuerySet[Job]) -> QuerySet[Any]:
    """The page's rows for job_summary."""
    return page.values_list(*SUMMARY_FIELDS, *SUMMARY_TIMES.values())


class SummaryJson:
    """Each job list item as JSON text, kept per server process by what it is made of (its row and
    tags; its spec summary follows from the row's job id and submission time): clients poll the
    same list, and encoding a 1000-row list was half its CPU, making its items most of the rest. A
    job that changes has a new row, so a new item; past LIMIT items, start over (~1.5 KB each)."""

    LIMIT = 20_000

    def __init__(self) -> None:
        self._known: dict[tuple[tuple[Any, ...], tuple[str, ...]], str] = {}

    def encoded(self, row: tuple[Any, ...], summary: SpecSummary, tags: tuple[str, ...]) -> str:
        key = (row, tags)
        found = self._known.get(key)
        if found is None:
            if len(self._known) >= self.LIMIT:
                self._known = {}
            found = self._known[key] = json_text(job_summary(row, summary, list(tags)))
        return found

    def items(
        self,
        rows: list[tuple[Any, ...]],
        summaries: dict[tuple[int, int], SpecSummary],
        tags: dict[int, tuple[str, ...]],
    ) -> list[str]:
        """`encoded` of each row of a page (by job id and submission time in `summaries`: a job
        deleted meanwhile has none, and no item), in one loop: the calls per item were a third of
        a warm 1000-row list."""
        known, created, untagged = self._known, SUMMARY_CREATED_MS, ()
        found: list[str] = []
        for row in rows:
            summary = summaries.get((row[0], row[created]))
            if summary is None:
                continue
            job_tags = tags.get(row[0], untagged)
            text = known.get((row, job_tags))
            found.append(text if text is not None else self.encoded(row, summary, job_tags))
        return found


summary_json = SummaryJson()


# JSON as the API's renderer writes it (settings.REST_FRAMEWORK: compact, UTF-8, no NaN); one
# encoder for all (json.dumps with options makes one per call: a cold 1000-row list's items took
# twice the time of one json.dumps of the whole list).
json_text = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), allow_nan=False).encode
_drf_json_text = DrfJSONEncoder(ensure_ascii=False, separators=(",", ":"), allow_nan=False).encode


def json_answer(data: Any, status: int = 200) -> HttpResponse:
    """`data` answered as DRF's Response with the API's renderer answers it, byte for byte (its
    encoder, compact, UTF-8, no NaN, U+2028/9 escaped), without its Response and rendering steps:
    for the answers most asked for (a job's detail, a submit's 202). The view's content negotiation still runs."""
    text = _drf_json_text(data).replace("\u2028", "\\u2028").replace("\u2029", "\\u2029")
    return HttpResponse(text.encode(), status=status, content_type="application/json")


def job_summary(row: tuple[Any, ...], summary: SpecSummary, tags: list[str]) -> dict[str, Any]:
    """One item of the job list, from a summary_rows row, its spec's summary and the job's tags."""
    (
        job_id,
        priority_class,
        name,
        username,
        state,
        ending_cause,
        user_retries,
        platform_retries,
        exit_code,
        vc,
        created_ms,
        launched_ms,
        completed_ms,
        expected_start_ms,
    ) = row
    return {
        "debugId": str(job_id),
        "name": name,
        "username": username,
        "state": state,
        "subState": SUB_STATES.get(state, "FRAMEWORK_UNKNOWN"),
        # (Job.execution_type_of, without an enum look-up per row)
        "executionType": EXECUTION_STOP if ending_cause == STOP_ASKED else EXECUTION_START,
        "retries": user_retries + platform_retries,
        "retryDetails": {"user": user_retries, "platform": platform_retries, "resource": 0},
        "retryDelayTime": None,
        "submissionTime": created_ms,
        "createdTime": created_ms,
        "launchedTime": launched_ms,
        "completedTime": completed_ms,
        "appExitCode": exit_code,
        "virtualCluster": vc,
        "totalGpuNumber": summary.gpu_count,
        "totalTaskNumber": summary.task_count,
        "totalTaskRoleNumber": summary.role_count,
        "jobPriority": priority_class,
        "tags": tags,
        # (not OpenPAI's: a waiting job's expected start, as on its detail; null otherwise or unknown)
        "expectedStartTime": expected_start_ms if state == JobState.WAITING else None,
    }


def _exit_trigger(tasks: list[Task]) -> Task | None:
    """The task whose exit decided the job: the first failed one, else the last to finish."""
    finished = [task for task in tasks if task.finished_at is not None and task.exit_code is not None]
    failed = [task for task in finished if task.exit_code != 0]
    if failed:
        return min(failed, key=lambda task: task.finished_at)  # type: ignore[arg-type, return-value]
    return max(finished, key=lambda task: task.finished_at) if finished else None  # type: ignore[arg-type, return-value]


# OpenPAI's attemptState (rest-server frameworkConverter.convertAttemptState) of a job or task state.
ATTEMPT_STATES = {"WAITING": "WAITING", "RUNNING": "RUNNING", "STOPPING": "STOPPING", "STOPPED": "STOPPED"}


def attempt_state(state: str) -> str:
    return ATTEMPT_STATES.get(state, state if state in ("SUCCEEDED", "FAILED") else "UNKNOWN")


def container_ip(task: Task) -> str | None:
    """Where the task's ports are reached: the node's address they are published on (OpenPAI's
    containerIp is its host's IP); a task not placed yet has none."""
    return task.node.address if task.node_id and task.node else (task.ip or None)


def exit_runtime_message(job: Job, trigger: Task | None) -> dict[str, Any] | None:
    """OpenPAI's appExitMessages.runtime (its runtime's exit info, as its webportal reads it): the
    code, the user's own exit code, the log line the exit spec matched and what to change
    (`solution`, web.fixes); None while the job has not failed."""
    if job.state != JobState.FAILED or job.exit_code is None:
        return None
    fix = fix_for(job)
    row = spec_row(job.exit_code)
    return {
        "exitCode": job.exit_code,
        "originalUserExitCode": job.user_exit_code,
        "reason": row["reason"],
        "matchedUserLogString": (fix.line or None) if fix else None,
        "matchedPattern": (fix.pattern or None) if fix else None,
        "solution": fix.what_to_change if fix else None,
        "trigger": f"{trigger.role}-{trigger.index}" if trigger else None,
    }


def job_status(job: Job, tasks: list[Task]) -> dict[str, Any]:
    trigger = _exit_trigger(tasks) if job.is_finished else None
    exit_spec = exit_spec_row(job.exit_code)
    return {
        "name": job.name,
        "username": job.owner.get_username(),
        "state": job.state,
        "subState": SUB_STATES.get(job.state, "FRAMEWORK_UNKNOWN"),
        "executionType": job.execution_type,
        "retries": job.retries_used + job.transient_retries,
        "retryDetails": retry_details(job),
        "retryDelayTime": None,
        "attemptId": max(job.job_attempt - 1, 0),
        "attemptState": attempt_state(job.state),
        "createdTime": epoch_ms(job.created_at),
        "appCreatedTime": epoch_ms(job.launched_at),
        "launchedTime": epoch_ms(job.launched_at),
        "completedTime": epoch_ms(job.completed_at),
        "appLaunchedTime": epoch_ms(job.launched_at),
        "appCompletedTime": epoch_ms(job.completed_at),
        "appExitCode": job.exit_code,
        "appUserExitCode": job.user_exit_code,
        "appExitSpec": exit_spec,
        "appExitDiagnostics": job.exit_diagnostics or None,
        "appExitDiagnosticsMessages": diagnostics_messages(job),
        "appExitMessages": {
            "container": None,
            "runtime": exit_runtime_message(job, trigger),
            "launcher": job.exit_diagnostics or None,
        },
        "appExitTriggerMessage": trigger.exit_diagnostics or None if trigger else None,
        "appExitTriggerMessageMessages": diagnostics_messages(trigger) if trigger else None,
        "appExitTriggerTaskRoleName": trigger.role if trigger else None,
        "appExitTriggerTaskIndex": trigger.index if trigger else None,
        "appExitType": (exit_spec or {}).get("type"),
        "pendingReason": job.pending_reason or None,
        "pendingReasonMessages": job.pending_reason_messages or None,
        "virtualCluster": job.virtual_cluster.name,
        "borrowedFrom": borrowed_from(job),
        **time_limit_status(job),
    }


def borrowed_from(job: Job) -> str | None:
    """The VC whose idle quota the job runs on (docs/admin/sharing.md, "Borrowing and reclaim"); null when it runs
    on its own VC's, or does not run."""
    if job.borrowed_from_id is None or job.state not in (JobState.RUNNING, JobState.STOPPING):
        return None
    return job.borrowed_from.name if job.borrowed_from is not None else None


def time_limit_status(job: Job, now: datetime | None = None) -> dict[str, Any]:
    """The portal's time limit (docs/admin/sharing.md): the limit, and while it runs the time left."""
    limit = job.time_limit_seconds
    left = None
    if limit is not None and job.state == JobState.RUNNING and job.launched_at is not None:
        elapsed = ((now or timezone.now()) - job.launched_at).total_seconds()
        left = max(0, int(limit - elapsed))
    return {"maxRunTimeSeconds": limit, "timeLeftSeconds": left}


def queue_status(job: Job) -> dict[str, Any]:
    """A waiting job's place in its VC's queue (1 = next) and its expected start (epoch ms; null
    when unknown, as when running jobs have no time limit), as the scheduler last worked them out,
    with what the estimate rests on (expectedStartMessage: its code, parameters and English)."""
    found = queue_place(job)
    if found is None:
        return {"queuePosition": None, "expectedStartTime": None, "expectedStartMessage": None}
    return {
        "queuePosition": found.position,
        "expectedStartTime": epoch_ms(found.start),
        "expectedStartMessage": found.note.as_dict(),
    }


def task_status(task: Task, log_url: Callable[[Task], str | None]) -> dict[str, Any]:
    return {
        "taskIndex": task.index,
        "taskState": task.state,
        "retries": task.retries,
        "attemptId": max(task.attempt - 1, 0),
        "attemptState": attempt_state(task.state),
        "containerId": task.executor_id or None,
        "containerIp": container_ip(task),
        "containerNodeName": task.node.name if task.node_id and task.node else None,
        "containerPorts": ports_by_label(task.ports),
        "containerGpus": gpu_bitmask(task.gpus),
        "containerLog": log_url(task),
        "containerExitCode": task.exit_code,
        "containerUserExitCode": task.user_exit_code,
        "containerExitSpec": exit_spec_row(task.exit_code),
        "containerExitDiagnostics": task.exit_diagnostics or None,
        "containerExitDiagnosticsMessages": diagnostics_messages(task),
        "createdTime": epoch_ms(task.started_at),
        "launchedTime": epoch_ms(task.started_at),
        "completedTime": epoch_ms(task.finished_at),
        "currentAttemptCreatedTime": epoch_ms(task.started_at),
        "currentAttemptLaunchedTime": epoch_ms(task.started_at),
        "currentAttemptCompletedTime": epoch_ms(task.finished_at),
    }


# A job's tags in the order they were added, compiled once (JobTag's own ordering joins the job).
job_tags: Prepared[str] = Prepared(
    lambda job_id: JobTag.objects.filter(job_id=job_id).order_by("id").values_list("name", flat=True), int
)


def job_detail(job: Job, tasks: list[Task], log_url: Callable[[Task], str | None]) -> dict[str, Any]:
    """`GET /api/v2/jobs/<user>~<job>`: jobStatus plus every task role's task statuses."""
    roles: dict[str, dict[str, Any]] = {}
    for role in (job.normalized or {}).get("taskRoles") or {}:
        roles[role] = {"taskRoleStatus": {"name": role}, "taskStatuses": []}
    for task in sorted(tasks, key=lambda task: (task.role, task.index)):
        role_entry = roles.setdefault(task.role, {"taskRoleStatus": {"name": task.role}, "taskStatuses": []})
        role_entry["taskStatuses"].append(task_status(task, log_url))
    return {
        "name": job.name,
        "debugId": str(job.pk),
        "tags": job_tags(job.pk),
        "jobPriority": job.priority_class,  # the class it runs as (its VC's default when it names none)
        "jobStatus": {**job_status(job, tasks), **queue_status(job)},
        "taskRoles": roles,
    }


def event_item(event: JobEvent) -> dict[str, Any]:
    warning = any(word in event.kind for word in ("fail", "error", "retry", "lost", "oom", "pending"))
    return {
        "uid": str(event.pk),
        "type": "Warning" if warning else "Normal",
        "reason": event.kind,
        "message": event.message,
        # (its code and parameters, as the API answers each message beside its English: null for an
        # event older than its code)
        "messageMessages": [event.params] if event.params.get("code") else None,
        "firstTimestamp": epoch_ms(event.created_at),
        "lastTimestamp": epoch_ms(event.created_at),
        "count": 1,
    }
