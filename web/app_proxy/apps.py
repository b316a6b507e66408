"""What the proxy knows of an app, read from the database a few seconds at a time per process
(the proxy runs on the event loop; these run on a thread)."""

from __future__ import annotations

import time
from dataclasses import dataclass
from datetime import datetime

from asgiref.sync import sync_to_async
from django.contrib.auth import get_user_model
from django.db import close_old_connections

from jobs.interactive import Target, app_token, idle_stop_at, may_open, serving_task, target_of
from jobs.models import InteractiveApp

LOOKUP_S = 3.0  # how stale a process's view of an app (its task's address, its users) may be


@dataclass(frozen=True)
class AppView:
    slug: str
    kind: str
    job_name: str  # owner~name
    job_state: str
    target: Target | None
    token: str
    owner_id: int
    users: tuple[str, ...]
    idle_seconds: int | None
    stop_at: datetime | None
    warned: bool


_apps: dict[str, tuple[float, AppView | None]] = {}


def _read_app(slug: str) -> AppView | None:
    close_old_connections()
    app = InteractiveApp.objects.select_related("job", "job__owner").filter(slug=slug).first()
    if app is None:
        return None
    return AppView(
        slug=slug,
        kind=app.kind,
        job_name=app.job.full_name,
        job_state=app.job.state,
        target=target_of(app, serving_task(app)),
        token=app_token(app),
        owner_id=app.job.owner_id,
        users=tuple(app.users or []),
        idle_seconds=app.idle_seconds,
        stop_at=idle_stop_at(app),
        warned=app.idle_warned_at is not None,
    )


def _may_open(slug: str, user_id: int) -> bool:
    close_old_connections()
    app = InteractiveApp.objects.select_related("job").filter(slug=slug).first()
    user = get_user_model().objects.filter(pk=user_id).first()
    return app is not None and user is not None and may_open(app, user)


async def app_view(slug: str, fresh: bool = False) -> AppView | None:
    now = time.monotonic()
    cached = _apps.get(slug)
    if cached and not fresh and now - cached[0] < LOOKUP_S:
        return cached[1]
    view = await sync_to_async(_read_app, thread_sensitive=False)(slug)
    if len(_apps) > 10_000:
        _apps.clear()
    _apps[slug] = (now, view)
    return view


_allowed: dict[tuple[str, int], tuple[float, bool]] = {}


async def allowed(slug: str, user_id: int) -> bool:
    """The owner or a user the app's plugin names, still active (re-read every LOOKUP_S)."""
    now = time.monotonic()
    cached = _allowed.get((slug, user_id))
    if cached and now - cached[0] < LOOKUP_S:
        return cached[1]
    verdict = await sync_to_async(_may_open, thread_sensitive=False)(slug, user_id)
    if len(_allowed) > 10_000:
        _allowed.clear()
    _allowed[(slug, user_id)] = (now, verdict)
    return verdict
