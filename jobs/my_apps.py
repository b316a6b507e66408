"""Every live interactive app (notebook, TensorBoard, `http` port) a user's jobs serve, across jobs,
with how long each has been idle and the GPUs its job holds: the "My apps" page and
`GET /api/v2/apps`. The apps others shared with a group of the user's are listed too, saying whose
they are. An admin's list holds everyone's, the longest idle first, so a notebook that
sits on GPUs unused is found in one look."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.db.models import Prefetch, Q
from django.utils import timezone

from accounts.permissions import group_ids_of
from jobs.actions import visible_jobs
from jobs.interactive import idle_since, idle_stop_at
from jobs.models import InteractiveApp, Job, JobState, Task, TaskState

# A Stopped, Succeeded or Failed job serves nothing: a waiting one will, a stopping one still may.
LIVE_STATES = (JobState.WAITING, JobState.RUNNING, JobState.STOPPING)
SHOWN = 500


@dataclass(frozen=True)
class LiveApp:
    app: InteractiveApp
    job: Job
    ready: bool  # its server answered in this run of the job
    idle_seconds: int | None  # since its last activity (or since it became ready); None before
    stop_at: datetime | None  # when the portal stops its job if it stays idle
    gpus: int  # the GPUs its job's running tasks hold now
    shared_by: str  # its owner's name when it is listed as shared with a group of the user's; else ""


def live_apps(user: Any, owner: str = "") -> list[LiveApp]:
    """The user's live apps and those shared with a group of theirs (an admin's: everyone's, or
    `owner`'s), the longest idle first, those not yet ready after them."""
    groups = group_ids_of(user)
    apps = InteractiveApp.objects.filter(
        Q(job__in=visible_jobs(user)) | Q(shared_with_group_id__in=groups), job__state__in=LIVE_STATES
    )
    if owner:
        apps = apps.filter(job__owner__username=owner)
    running = Prefetch("job__tasks", queryset=Task.objects.filter(state=TaskState.RUNNING), to_attr="running_tasks")
    apps = (
        apps.select_related("job", "job__owner", "shared_with_group")
        .prefetch_related(running)
        .order_by("job_id", "id")[:SHOWN]
    )
    now = timezone.now()
    listed = []
    for app in apps:
        since = idle_since(app) if app.job.state == JobState.RUNNING else None
        running_tasks: list[Task] = app.job.running_tasks  # type: ignore[attr-defined]
        held = sum(len(task.gpus or []) for task in running_tasks)
        listed.append(
            LiveApp(
                app=app,
                job=app.job,
                ready=app.ready_at is not None,
                idle_seconds=max(int((now - since).total_seconds()), 0) if since else None,
                stop_at=idle_stop_at(app) if since else None,
                gpus=held,
                shared_by=app.job.owner.get_username()
                if app.job.owner_id != user.pk and app.shared_with_group_id in groups
                else "",
            )
        )
    listed.sort(key=lambda live: (live.idle_seconds is None, -(live.idle_seconds or 0)))
    return listed


def app_owners(user: Any) -> list[str]:
    """Whose live apps an admin may list (the owner filter), by name."""
    jobs = visible_jobs(user).filter(state__in=LIVE_STATES, apps__isnull=False)
    return sorted(set(jobs.values_list("owner__username", flat=True)))
