"""What the job page shows beside the job's row: each task attempt's log and exit, its apps.

Every attempt writes its own log file. The attempt a task runs now (or ran last) is the Task row;
the ones before it are TaskAttempt rows (jobs.lifecycle keeps one per ended attempt), so a job
retried three times offers all four runs.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.http import Http404, HttpRequest
from django.urls import reverse
from django.utils.translation import gettext as _

from jobs import actions
from jobs.interactive import idle_stop_at, may_open
from jobs.models import Job, JobState, Task, TaskAttempt, TaskState


def job_or_404(request: HttpRequest, full_name: str, *, summary: bool = False) -> Job:
    """The job a page names, if the user may manage it; `summary` (read-only pages): another user's
    job too, on a shared job list. Http404 otherwise."""
    find = actions.get_job_summary_for if summary else actions.get_job_for
    try:
        return find(request.user, full_name)
    except Job.DoesNotExist as error:
        raise Http404(_("No such job.")) from error


@dataclass(frozen=True)
class LogSource:
    key: str  # "task:<pk>" (the attempt now) or "attempt:<pk>" (an earlier one)
    label: str
    log_path: str
    file_name: str  # for the full log's download


@dataclass(frozen=True)
class AttemptRow:
    """One run of one task, for the attempts table."""

    run: int  # the job attempt (1 = the first launch)
    task: str  # role-index
    attempt: int
    node: str
    started_at: datetime | None
    finished_at: datetime | None
    running: bool
    exit_code: int | None
    user_exit_code: int | None
    diagnostics: str
    diagnostics_message: dict[str, Any]  # (stored: web.templatetags.portal.diagnostics_text renders it)
    log_key: str


def _task_label(role: str, index: int) -> str:
    return f"{role}-{index}"


def _file_name(job: Job, role: str, index: int, run: int, attempt: int) -> str:
    return f"{job.name}-{role}-{index}-run{run}-attempt{attempt}.log"


def _earlier_attempts(job: Job, tasks: list[Task]) -> list[TaskAttempt]:
    """Ended attempts, newest first, except those that are still a task's current one (same log)."""
    current = {task.log_path for task in tasks if task.log_path}
    attempts = job.attempts.order_by("-job_attempt", "role", "index", "-attempt")
    return [attempt for attempt in attempts if not attempt.log_path or attempt.log_path not in current]


def _task_source(job: Job, task: Task) -> LogSource:
    label = _("%(task)s, attempt now") % {"task": _task_label(task.role, task.index)}
    file_name = _file_name(job, task.role, task.index, max(job.job_attempt, 1), max(task.attempt, 1))
    return LogSource(f"task:{task.pk}", label, task.log_path, file_name)


def _attempt_source(job: Job, attempt: TaskAttempt) -> LogSource:
    label = _("%(task)s, run %(run)d, attempt %(attempt)d (exit %(code)s)") % {
        "task": _task_label(attempt.role, attempt.index),
        "run": attempt.job_attempt,
        "attempt": attempt.attempt,
        "code": attempt.exit_code,
    }
    file_name = _file_name(job, attempt.role, attempt.index, attempt.job_attempt, attempt.attempt)
    return LogSource(f"attempt:{attempt.pk}", label, attempt.log_path, file_name)


def log_sources(job: Job, tasks: list[Task]) -> list[LogSource]:
    """The logs the page offers: each task's current attempt first, then every earlier one."""
    current = [_task_source(job, task) for task in tasks]
    return current + [_attempt_source(job, attempt) for attempt in _earlier_attempts(job, tasks)]


def find_log_source(job: Job, key: str) -> LogSource | None:
    """The log a `task:<pk>` / `attempt:<pk>` key names, if it is one of this job's."""
    kind, _sep, pk = key.partition(":")
    if not pk.isdigit() or len(pk) > 18:
        return None
    if kind == "task":
        task = job.tasks.filter(pk=int(pk)).first()
        return _task_source(job, task) if task else None
    if kind == "attempt":
        attempt = job.attempts.filter(pk=int(pk)).first()
        return _attempt_source(job, attempt) if attempt else None
    return None


def attempt_rows(job: Job, tasks: list[Task]) -> list[AttemptRow]:
    """Every run of every task, the ones running now first, then the ended ones newest first."""
    rows = [
        AttemptRow(
            run=job.job_attempt,
            task=_task_label(task.role, task.index),
            attempt=task.attempt,
            node=task.node.name if task.node_id and task.node else "",
            started_at=task.started_at,
            finished_at=None,
            running=True,
            exit_code=None,
            user_exit_code=None,
            diagnostics="",
            diagnostics_message={},
            log_key=f"task:{task.pk}",
        )
        for task in tasks
        if task.state == TaskState.RUNNING and task.attempt > 0
    ]
    rows += [_ended_row(attempt) for attempt in job.attempts.order_by("-job_attempt", "role", "index", "-attempt")]
    return rows


def _ended_row(attempt: TaskAttempt) -> AttemptRow:
    return AttemptRow(
        run=attempt.job_attempt,
        task=_task_label(attempt.role, attempt.index),
        attempt=attempt.attempt,
        node=attempt.node_name,
        started_at=attempt.started_at,
        finished_at=attempt.finished_at,
        running=False,
        exit_code=attempt.exit_code,
        user_exit_code=attempt.user_exit_code,
        diagnostics=attempt.exit_diagnostics,
        diagnostics_message=attempt.exit_diagnostics_message,
        log_key=f"attempt:{attempt.pk}",
    )


def selected_log(sources: list[LogSource], wanted: str) -> Any:
    """The log source the address asks for (`?log=`), else the first task's."""
    return next((source for source in sources if source.key == wanted), sources[0] if sources else None)


@dataclass(frozen=True)
class AppRow:
    """One of the job's interactive apps, for the job page's Apps line."""

    kind: str
    port_label: str
    open_url: str  # the portal's Open view: it sends the browser to the app's own origin
    may_open: bool
    running: bool  # its job runs (it may still be starting)
    ready: bool  # its server answered
    stop_at: datetime | None  # when it stops if it stays idle
    warned: bool


def app_rows(job: Job, tasks: list[Task], user: Any) -> list[AppRow]:
    """The job's apps; each serving task learns its apps' Open links (`app_urls`, by port label),
    which the task table shows instead of the node's raw address."""
    rows = []
    first_tasks = {task.role: task for task in tasks if task.index == 0}
    for app in job.apps.all():
        url = reverse("apps:open", args=[app.slug])
        task = first_tasks.get(app.role)
        if task is not None:
            task.app_urls = {**getattr(task, "app_urls", {}), app.port_label: url}  # type: ignore[attr-defined]
        rows.append(
            AppRow(
                kind=app.kind,
                port_label=app.port_label,
                open_url=url,
                may_open=may_open(app, user),
                running=job.state == JobState.RUNNING and task is not None and task.state == TaskState.RUNNING,
                ready=app.ready_at is not None,
                stop_at=idle_stop_at(app) if app.ready_at else None,
                warned=app.idle_warned_at is not None,
            )
        )
    return rows
