"""A job's interactive apps over the database: made at submit, who may open one, where it listens,
the token its server accepts, and its idle clock (read by the app watcher and the job page)."""

from __future__ import annotations

import secrets
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.utils import timezone
from django.utils.crypto import salted_hmac

from clusters.executors.app_ports import app_host
from jobs.group_shares import group_to_share_with
from jobs.models import InteractiveApp, Job, JobState, Task, TaskState
from jobs.protocol.hooks import JUPYTER_PLUGIN
from jobs.protocol.interactive import declared_apps
from queries.prepared import Prepared

WARN_BEFORE_S = 600  # the app shows the stop coming this long before (a quarter of a shorter idle time)


@dataclass(frozen=True)
class Target:
    """Where a running app's server answers: the node's address and the task's allocated port."""

    host: str
    port: int


def new_apps(job: Job) -> list[InteractiveApp]:
    """A saved job's apps, unsaved, each with a random slug (its host name)."""
    apps = []
    for app in declared_apps(job.spec):
        minutes = app.idle_minutes
        if minutes is None and app.kind == JUPYTER_PLUGIN:
            minutes = settings.PAI_APP_IDLE_MINUTES or None
        apps.append(
            InteractiveApp(
                job=job,
                kind=app.kind,
                role=app.role,
                port_label=app.port_label,
                slug=secrets.token_hex(10),
                idle_seconds=round(minutes * 60) if minutes else None,
                users=list(app.users),
            )
        )
    return apps


# Read for every task the scheduler starts (its Jupyter's token): compiled once (queries.prepared).
_APPS_OF: Prepared[InteractiveApp] = Prepared(lambda job_id: InteractiveApp.objects.filter(job_id=job_id), int)


def app_token(app: InteractiveApp) -> str:
    """The token the app's server accepts (JUPYTER_TOKEN in its task): derived from the portal's
    secret and the slug, never stored; the proxy sends it, so the browser never holds it."""
    return salted_hmac("pai.interactive-app-token", app.slug, algorithm="sha256").hexdigest()[:48]


def may_open(app: InteractiveApp, user: Any) -> bool:
    """The job's owner, the users its plugin names and the members of the group its owner shared it
    with (read now: one who left the group is refused); nobody else, admins included (a notebook
    is someone's live session)."""
    if not getattr(user, "is_authenticated", False) or not user.is_active:
        return False
    if user.pk == app.job.owner_id or user.get_username() in (app.users or []):
        return True
    return app.shared_with_group_id is not None and user.groups.filter(pk=app.shared_with_group_id).exists()


def share(app: InteractiveApp, owner: Any, group_name: str | None) -> InteractiveApp:
    """The app shared with one of its owner's groups (a name; none: with no group). Raises
    JobConfigError for a group the owner is not in; the caller checks that `owner` owns the app."""
    app.shared_with_group = group_to_share_with(owner, group_name, "sharedWithGroup")
    app.save(update_fields=["shared_with_group"])
    return app


def serving_task(app: InteractiveApp) -> Task | None:
    return app.job.tasks.select_related("node").filter(role=app.role, index=0).first()


def target_of(app: InteractiveApp, task: Task | None) -> Target | None:
    """Where the app answers while its job and task run; None otherwise. An app's port is open to
    its job and the portal alone where the node allows (clusters/executors/app_ports.py)."""
    if app.job.state != JobState.RUNNING or task is None or task.state != TaskState.RUNNING:
        return None
    ports = (task.ports or {}).get(app.port_label)
    port = (ports[0] if ports else None) if isinstance(ports, list) else ports
    node = task.node
    host = app_host(node.executor, node.docker_url, node.address, task.ip, app.job_id) if node else task.ip
    if not host or not port:
        return None
    return Target(host, int(port))


def app_origin(app: InteractiveApp, scheme: str, port: int | str | None) -> str:
    """The app's own origin: `<slug>.<PAI_APPS_DOMAIN>` on PAI_APPS_PORT, else the given port."""
    port = settings.PAI_APPS_PORT or port
    default = {"http": 80, "https": 443}.get(scheme)
    suffix = f":{port}" if port and int(port) != default else ""
    return f"{scheme}://{app.slug}.{settings.PAI_APPS_DOMAIN}{suffix}"


def slug_of_host(host: str) -> str | None:
    """The slug a request's Host names under the apps domain, or None (the portal's own hosts)."""
    name = host.rsplit(":", 1)[0] if not host.endswith("]") else host
    name = name.lower().rstrip(".")
    suffix = "." + settings.PAI_APPS_DOMAIN
    if not name.endswith(suffix):
        return None
    slug = name[: -len(suffix)]
    return slug if slug and "." not in slug else None


def idle_since(app: InteractiveApp) -> datetime | None:
    """Since when the app has been idle: its last activity, else when it became ready."""
    return app.last_activity_at or app.ready_at


def idle_stop_at(app: InteractiveApp) -> datetime | None:
    """When an idle app will be stopped, if nothing happens before; None when it is never."""
    since = idle_since(app)
    if not app.idle_seconds or since is None:
        return None
    return since + timedelta(seconds=app.idle_seconds)


def warning_window(app: InteractiveApp) -> timedelta:
    return timedelta(seconds=min(WARN_BEFORE_S, (app.idle_seconds or 0) / 4))


def record_activity(slug: str, when: datetime | None = None) -> None:
    """Proxied traffic: the idle clock starts again (and any warning is withdrawn)."""
    InteractiveApp.objects.filter(slug=slug).update(last_activity_at=when or timezone.now(), idle_warned_at=None)


def app_secret_env(job: Job, task: Task) -> dict[str, str]:
    """JUPYTER_TOKEN for the task that serves the job's Jupyter (a secret variable: not in logs)."""
    if task.index != 0:
        return {}
    for app in _APPS_OF(job.pk):
        if app.kind == JUPYTER_PLUGIN and app.role == task.role:
            return {"JUPYTER_TOKEN": app_token(app)}
    return {}
