"""Interactive apps watched by the sampler each period: whether each running app's server answers
yet (the job page's Open button waits for it), whether Jupyter is busy, and idle culling: an app
idle (no proxied traffic, which web/app_proxy records, and for Jupyter no busy kernel) for its
idle time is stopped as a user's Stop would be (`lifecycle.request_idle_stop`), after the app has
shown a warning (`idle_warned_at`, which the proxy's banner reads) for the last part of it.

Probes go to the task's port on its node, side by side, each within PROBE_TIMEOUT_S, from the
sampler's process: a slow or frozen app holds no scheduler pass.
"""

from __future__ import annotations

import json
import logging
import urllib.error
import urllib.request
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import datetime

from django.utils import timezone
from django.utils.dateparse import parse_datetime

from jobs import lifecycle
from jobs.interactive import Target, app_token, idle_stop_at, serving_task, target_of, warning_window
from jobs.lifecycle import JobStateError
from jobs.models import InteractiveApp, Job, JobState
from jobs.protocol.hooks import JUPYTER_PLUGIN

log = logging.getLogger("pai.apps")

PROBE_TIMEOUT_S = 3.0
PROBE_THREADS = 8


@dataclass(frozen=True)
class Probe:
    answered: bool
    busy: bool = False  # a Jupyter kernel is running code
    last_activity: datetime | None = None  # what Jupyter itself last saw (its API, its kernels)


def probe_app(app: InteractiveApp, target: Target) -> Probe:
    """Any HTTP answer counts as up. Jupyter is asked for its kernels only (its /api/status counts
    every API call as activity, this probe's own included): busy ones, and their last activity."""
    base = f"http://{target.host}:{target.port}"
    jupyter = app.kind == JUPYTER_PLUGIN
    headers = {"Authorization": f"token {app_token(app)}"} if jupyter else {}
    try:
        kernels = _get(f"{base}/api/kernels" if jupyter else f"{base}/", headers)
    except OSError:
        return Probe(answered=False)
    listed = [k for k in kernels if isinstance(k, dict)] if jupyter and isinstance(kernels, list) else []
    busy = any(k.get("execution_state") == "busy" for k in listed)
    seen = [when for k in listed if (when := parse_datetime(str(k.get("last_activity") or "")))]
    return Probe(answered=True, busy=busy, last_activity=max(seen, default=None))


def _get(url: str, headers: dict[str, str]) -> object:
    request = urllib.request.Request(url, headers=headers)  # noqa: S310 (an http:// URL built above)
    try:
        with urllib.request.urlopen(request, timeout=PROBE_TIMEOUT_S) as answer:  # noqa: S310 (the same)
            body = answer.read(1_000_000)
    except urllib.error.HTTPError as error:  # an answer all the same
        error.close()
        return None
    try:
        return json.loads(body)
    except ValueError:
        return None


def watch_apps(probe: Callable[[InteractiveApp, Target], Probe] = probe_app) -> None:
    now = timezone.now()
    # An app's readiness and clock belong to one run of its job: cleared when it is not running.
    InteractiveApp.objects.exclude(job__state=JobState.RUNNING).filter(ready_at__isnull=False).update(
        ready_at=None, last_activity_at=None, idle_warned_at=None
    )
    apps = list(
        InteractiveApp.objects.filter(job__state=JobState.RUNNING)
        .exclude(job__ending_cause=Job.Ending.STOP)
        .select_related("job")
        .order_by("id")
    )
    targets = [(app, target_of(app, serving_task(app))) for app in apps]
    live = [(app, target) for app, target in targets if target is not None]
    for app, target in targets:
        if target is None and app.ready_at is not None:  # its task is being retried
            InteractiveApp.objects.filter(pk=app.pk).update(ready_at=None, idle_warned_at=None)
    if not live:
        return
    with ThreadPoolExecutor(min(PROBE_THREADS, len(live)), thread_name_prefix="app-probe") as pool:
        probes = list(pool.map(lambda pair: probe(*pair), live))
    for (app, _), answer in zip(live, probes, strict=True):
        _judge(app, answer, now)


def _judge(app: InteractiveApp, answer: Probe, now: datetime) -> None:
    fields: dict[str, object] = {}
    if answer.answered and app.ready_at is None:
        fields["ready_at"] = app.ready_at = now
    if answer.busy or (answer.last_activity and (app.last_activity_at or app.ready_at or now) < answer.last_activity):
        seen = now if answer.busy else min(now, answer.last_activity or now)
        fields.update(last_activity_at=seen, idle_warned_at=None)
        app.last_activity_at, app.idle_warned_at = seen, None
    if fields:
        InteractiveApp.objects.filter(pk=app.pk).update(**fields)
    stop_at = idle_stop_at(app)
    if stop_at is None or answer.busy:
        return
    if now >= stop_at:
        minutes = f"{(app.idle_seconds or 0) / 60:g}"
        try:
            lifecycle.request_idle_stop(app.job, app.kind, minutes)
            log.info("stopping job %s: its %s was idle for %s minutes", app.job.full_name, app.kind, minutes)
        except JobStateError:
            pass  # it ended meanwhile
    elif now >= stop_at - warning_window(app) and app.idle_warned_at is None:
        InteractiveApp.objects.filter(pk=app.pk, idle_warned_at__isnull=True).update(idle_warned_at=now)
