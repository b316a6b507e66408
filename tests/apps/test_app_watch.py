"""The app watcher: an app is ready once it answers; Jupyter's busy kernel and its own last
activity keep it alive; an idle app is warned, then stopped as a Stop with its reason."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from jobs.interactive import Target, serving_task, target_of
from jobs.models import InteractiveApp, Job, JobEvent
from scheduling.app_watch import Probe, probe_app, watch_apps

pytestmark = pytest.mark.django_db


def _answering(busy: bool = False, last_activity=None):
    return lambda app, target: Probe(answered=True, busy=busy, last_activity=last_activity)


def _ago(app: InteractiveApp, seconds: float) -> None:
    when = timezone.now() - timedelta(seconds=seconds)
    InteractiveApp.objects.filter(pk=app.pk).update(ready_at=when, last_activity_at=when)


def test_an_app_is_ready_once_its_server_answers(running_app):
    app = running_app()
    watch_apps(lambda app, target: Probe(answered=False))
    app.refresh_from_db()
    assert app.ready_at is None
    watch_apps(_answering())
    app.refresh_from_db()
    assert app.ready_at is not None


def test_a_real_server_counts_as_answering_whatever_it_says(running_app):
    app = running_app("http")
    target = target_of(app, serving_task(app))
    assert target is not None and probe_app(app, target).answered


def test_nothing_answers_on_a_closed_port(running_app):
    app = running_app("http")
    assert not probe_app(app, Target("127.0.0.1", 1)).answered


def test_an_idle_app_is_warned_before_it_is_stopped(running_app):
    app = running_app(idle_seconds=600)
    _ago(app, 500)  # within the last 150 s (a quarter of its idle time)
    watch_apps(_answering())
    app.refresh_from_db()
    assert app.idle_warned_at is not None
    assert Job.objects.get(pk=app.job_id).execution_type == "START"


def test_an_app_idle_past_its_time_stops_its_job_saying_why(running_app):
    app = running_app(idle_seconds=600)
    _ago(app, 601)
    watch_apps(_answering())
    job = Job.objects.get(pk=app.job_id)
    assert job.execution_type == "STOP" and job.ending_reason == "jupyter was idle for 10 minutes"
    assert JobEvent.objects.filter(job=job, kind="idle-stop").exists()


def test_a_busy_kernel_keeps_an_idle_app_running(running_app):
    app = running_app(idle_seconds=600)
    _ago(app, 601)
    watch_apps(_answering(busy=True))
    app.refresh_from_db()
    assert Job.objects.get(pk=app.job_id).execution_type == "START"
    assert timezone.now() - app.last_activity_at < timedelta(seconds=5)


def test_jupyters_own_activity_counts(running_app):
    app = running_app(idle_seconds=600)
    _ago(app, 601)
    watch_apps(_answering(last_activity=timezone.now() - timedelta(seconds=30)))
    app.refresh_from_db()
    assert Job.objects.get(pk=app.job_id).execution_type == "START" and app.idle_warned_at is None


def test_an_app_without_an_idle_time_is_never_stopped(running_app):
    app = running_app("tensorboard")
    _ago(app, 10**6)
    watch_apps(_answering())
    assert Job.objects.get(pk=app.job_id).execution_type == "START"


def test_an_ended_jobs_app_forgets_its_run(running_app):
    app = running_app(idle_seconds=600)
    _ago(app, 30)
    Job.objects.filter(pk=app.job_id).update(state="STOPPED")
    watch_apps(_answering())
    app.refresh_from_db()
    assert app.ready_at is None and app.last_activity_at is None
