"""Sweeps: one submit, many runs (`extras.sweep`, expanded by jobs.protocol.sweeps), each run a
normal job (its page, logs, retries), created together in one transaction. Runs beyond the
sweep's `maxConcurrent` start held; the scheduler's dependency pass lets them go as slots free
(scheduling.dependencies)."""

from __future__ import annotations

import json
from typing import Any, cast

from django.db import IntegrityError, transaction
from django.db.models import Count, QuerySet
from django.utils import timezone

from accounts.permissions import is_admin
from catalogue import Message
from jobs import dependencies, lifecycle
from jobs.actions import Checked, JobNameConflict, SubmitChecks, new_job, new_tasks, restart_job
from jobs.crypto import encrypt_text
from jobs.interactive import new_apps
from jobs.lifecycle import JobStateError
from jobs.models import InteractiveApp, Job, JobEvent, Sweep, Task
from jobs.protocol import JobConfigError
from jobs.protocol.export import export_masked
from jobs.protocol.loader import load_document
from jobs.protocol.search_spec import as_block
from jobs.protocol.submission import Submission, read
from jobs.protocol.sweeps import Run, plan, run_documents, run_name
from jobs.wake import wake_scheduler


def submit_sweep(user: Any, config: str | Submission) -> Sweep:
    """Validate the sweep and create it with all its runs, WAITING, in one transaction. Its size is
    checked before any run is made (jobs.protocol.sweeps.plan); then each run, its values put in,
    gets every check a job gets at submit (the answers from the database, files and DNS shared by
    the runs). Raises JobConfigError naming the field (and the run, for one whose values fail)."""
    submission = config if isinstance(config, Submission) else read(config)
    doc = submission.document
    sweep_plan = plan(doc)
    if doc.get("protocolVersion") != 2:
        raise JobConfigError([("extras.sweep", Message.of("config.sweep.not_v2"))])
    checks = SubmitChecks(user)
    made = [
        checked_run(checks, run_doc, run)
        for run_doc, run in zip(run_documents(doc, sweep_plan), sweep_plan.runs, strict=True)
    ]
    name = str(doc["name"])
    sweep = Sweep(
        owner=user,
        name=name,
        kind=sweep_plan.kind,
        max_concurrent=sweep_plan.max_concurrent,
        config_text=submission.masked_text,
    )
    if sweep_plan.search is not None:
        sweep.search = as_block(sweep_plan.search)
        sweep.search_document_encrypted = encrypt_text(json.dumps(doc))
    try:
        with transaction.atomic():
            sweep.save()
            add_runs(sweep, made)
    except IntegrityError as exc:
        run = run_name(doc, sweep_plan.runs[0], sweep_plan.total)
        raise JobNameConflict(
            Message.of("config.sweep.name_taken", name=name, run=run, user=user.get_username())
        ) from exc
    wake_scheduler()
    return sweep


def add_runs(sweep: Sweep, made: list[tuple[Run, Checked, str]]) -> list[Job]:
    """Checked runs made jobs of a saved sweep, with their tasks, apps and first events (in the
    caller's transaction); those past its cap start held."""
    user, cap = sweep.owner, sweep.max_concurrent
    jobs, waits = [], []
    for position, (run, checked, run_text) in enumerate(made):
        job = new_job(user, checked, run_text)
        job.sweep_index, job.sweep_values = run.index, run.values
        job.held = job.held or (cap is not None and position >= cap)
        job.sweep = sweep
        jobs.append(job)
        waits.append(checked.waits_for)
    Job.objects.bulk_create(jobs)
    for job, waits_for in zip(jobs, waits, strict=True):
        dependencies.record(job, waits_for)
    Task.objects.bulk_create([task for job in jobs for task in new_tasks(job)], batch_size=2000)
    InteractiveApp.objects.bulk_create([app for job in jobs for app in new_apps(job)], batch_size=2000)
    JobEvent.objects.bulk_create(
        [
            lifecycle.event_row(
                job.pk,
                "submitted",
                Message.of(
                    "event.submitted_run",
                    vc=job.virtual_cluster.name,
                    index=cast(int, job.sweep_index),
                    sweep=sweep.name,
                ),
            )
            for job in jobs
        ],
        batch_size=2000,
    )
    return jobs


def checked_run(checks: SubmitChecks, run_doc: dict[str, Any], run: Run) -> tuple[Run, Checked, str]:
    """A run as a job: its config loaded and checked as any job's at submit, and its stored text.
    A run other than the first fails naming itself and its values (the first fails as the sweep)."""
    run_text = export_masked(run_doc)
    try:
        return run, checks.validate(load_document(run_doc)), run_text
    except JobConfigError as refused:
        if run.index == 0 or not run.values:
            raise
        said = ", ".join(f"{name}={value}" for name, value in run.values.items())
        run_name = str(run_doc["name"])
        errors = [
            (field, Message.of("config.sweep.run", run=run_name, values=said, message=message))
            for field, message in refused.errors
        ]
        raise type(refused)(errors, line=refused.line, column=refused.column) from refused


def runs(sweep: Sweep) -> QuerySet[Job]:
    return sweep.runs.order_by("sweep_index")


def stop_sweep(sweep: Sweep, by: Any) -> int:
    """Ask every run that has not finished to stop, in one update however many (the scheduler
    stops the waiting ones in bulk, held or not), an adaptive search making no more. Returns how
    many were asked."""
    with transaction.atomic():
        Sweep.objects.filter(pk=sweep.pk).update(search_done=True)
        wake_scheduler()  # (once the stops are committed)
        return lifecycle.request_stops(runs(sweep), by.get_username())


def resubmit_failed(sweep: Sweep, by: Any) -> list[Job]:
    """Start again every run that failed or was stopped (each as a new attempt of its job)."""
    again = []
    for job in runs(sweep).filter(state__in=("FAILED", "STOPPED")):
        try:
            again.append(restart_job(job, by))
        except JobStateError:
            continue  # started again meanwhile
    return again


def visible_sweeps(user: Any) -> QuerySet[Sweep]:
    """The sweeps a user may read and act on: their own; admins: everyone's."""
    sweeps = Sweep.objects.select_related("owner")
    return sweeps if is_admin(user) else sweeps.filter(owner=user)


def find_sweep(user: Any, full_name: str) -> Sweep:
    """`<user>~<name>`; raises Sweep.DoesNotExist (also for a sweep the user may not see)."""
    owner, _, name = full_name.rpartition("~")
    return visible_sweeps(user).get(owner__username=owner, name=name)


def run_rows(sweep: Sweep) -> list[dict[str, Any]]:
    """Each run as the sweep page and the API show it: values, state, duration, GPU-hours."""
    now = timezone.now()
    rows = []
    for name, index, values, state, gpus, launched, completed in runs(sweep).values_list(
        "name", "sweep_index", "sweep_values", "state", "gpu_count", "launched_at", "completed_at"
    ):
        seconds = ((completed or now) - launched).total_seconds() if launched else 0.0
        rows.append(
            {
                "name": name,
                "index": index,
                "values": values,
                "state": state,
                "durationSeconds": round(seconds, 1),
                "gpuHours": round(gpus * seconds / 3600, 3),
            }
        )
    return rows


def summary(sweep: Sweep) -> dict[str, Any]:
    """The sweep's shape in the API: its runs counted by state."""
    counts = dict(runs(sweep).order_by().values("state").annotate(n=Count("pk")).values_list("state", "n"))
    return {
        "name": sweep.name,
        "username": sweep.owner.get_username(),
        "kind": sweep.kind,
        "maxConcurrent": sweep.max_concurrent,
        "createdTime": int(sweep.created_at.timestamp() * 1000),
        "runs": sum(counts.values()),
        "states": counts,
    }
