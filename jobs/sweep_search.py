"""Adaptive search over a sweep's runs (`extras.sweep.search`, docs/user/sweeps.md): the trials
are the sweep's runs and their stored metrics, read back as rows each time
(jobs.protocol.search rebuilds the Optuna study from them: nothing lives in memory, so a
restarted sampler goes on where the last one was). The sampler's "adaptive search" duty runs
`advance_searches` after it has read the tasks' metrics: it stops the runs the pruner finds
behind (the user's Stop path: SIGTERM and its grace, STOPPED with the reason) and makes new runs
while the search has trials left and room under its maxConcurrent."""

from __future__ import annotations

import contextlib
import json
import logging
from dataclasses import dataclass
from typing import Any

from django.db import transaction
from django.db.models import Q

from catalogue import Message
from jobs import lifecycle, texts
from jobs.actions import SubmitChecks
from jobs.crypto import decrypt_text
from jobs.lifecycle import JobStateError
from jobs.models import Job, JobState, Sweep
from jobs.protocol import JobConfigError
from jobs.protocol.search import COMPLETE, FAILED, PRUNED, RUNNING, Pruning, TrialRow, ask, best, prune
from jobs.protocol.search_spec import SearchSpec, read_search
from jobs.protocol.sweeps import Run, run_document
from jobs.states import FINISHED_JOB_STATES
from jobs.sweep_curves import CurveCache, read_curves
from jobs.sweeps import add_runs, checked_run

log = logging.getLogger("pai.search")
CURVES = CurveCache()  # the duty's, from pass to pass (the sampler's process)


@dataclass(frozen=True)
class Trial:
    """A run of the search: its row for the search, and what stopping it needs."""

    row: TrialRow
    job_id: int
    name: str
    job_state: str
    ending: str


def spec_of(sweep: Sweep) -> SearchSpec:
    return read_search(sweep.search)


def trials(sweep: Sweep, spec: SearchSpec, cache: CurveCache | None = None) -> list[Trial]:
    """The sweep's runs as trials, by index: values, state, and the metric's curve (its first
    task's that reported it; a finished run's value is the curve's last) and when each step was
    read (what orders the runs' arrivals at an ASHA rung). `cache`: the curves
    kept from the last call (jobs/sweep_curves.py), else read whole."""
    runs = list(
        sweep.runs.order_by("sweep_index").values_list(
            "pk", "name", "sweep_index", "sweep_values", "state", "ending_cause", "exit_diagnostics_message"
        )
    )
    job_ids = [run[0] for run in runs]
    if cache is not None:
        curves = cache.curves(job_ids, spec.metric)
    else:
        cache = read_curves(job_ids, spec.metric)
        curves = cache.known(job_ids, spec.metric)
    read_at = cache.read_times(job_ids, spec.metric)
    answer = []
    for pk, name, index, values, state, ending, reason in runs:
        curve = curves.get(pk, {})
        trial_state = _trial_state(state, reason)
        last = curve[max(curve)] if curve and trial_state == COMPLETE else None
        row = TrialRow(index or 0, dict(values or {}), trial_state, last, curve, read_at.get(pk, {}))
        answer.append(Trial(row, pk, name, state, ending))
    return answer


def _trial_state(state: str, reason: dict[str, Any]) -> str:
    """A run that succeeded is complete; one stopped by the pruner pruned; one that failed or a
    user stopped failed (it says nothing of its values' worth); any other still running."""
    if state == JobState.SUCCEEDED:
        return COMPLETE
    if state == JobState.STOPPED:
        return PRUNED if _says_pruned(reason) else FAILED
    return FAILED if state == JobState.FAILED else RUNNING


def _says_pruned(message: Any) -> bool:
    """Whether a stored message (an end's diagnostics: the pruner's reason within) says so."""
    if isinstance(message, dict):
        return message.get("code") in texts.PRUNED_CODES or any(_says_pruned(v) for v in message.values())
    if isinstance(message, list):
        return any(_says_pruned(item) for item in message)
    return False


def advance_searches() -> None:
    """The sampler's duty: every search with trials to make or runs to judge, one step each: first
    every search's runs behind stopped (a stop frees GPUs, the scheduler acts on it at once), then
    their new trials (asking TPE for values takes a while: no pruned run waits for another search's)."""
    sweeps = (
        Sweep.objects.filter(kind="search")
        .filter(Q(search_done=False) | Q(runs__state=JobState.RUNNING))
        .distinct()
        .select_related("owner")
    )
    judged = []
    for sweep in sweeps:
        try:
            judged.append((sweep, prune_behind(sweep, CURVES)))
        except Exception:  # (one search's trouble is not the others')
            log.exception("adaptive search %s: could not judge its runs", sweep.full_name)
    for sweep, (spec, found) in judged:
        try:
            make_trials(sweep, spec, found)
        except Exception:
            log.exception("adaptive search %s: could not advance it", sweep.full_name)
    CURVES.forget_untouched()


def forget_search_curves() -> None:
    """Drop the duty's kept curves (the tests' rolled-back jobs give their ids out again)."""
    CURVES.runs.clear()


def advance(sweep: Sweep, cache: CurveCache | None = None) -> None:
    """Prune the runs behind, then make as many new trials as there is room for."""
    make_trials(sweep, *prune_behind(sweep, cache))


def prune_behind(sweep: Sweep, cache: CurveCache | None = None) -> tuple[SearchSpec, list[Trial]]:
    """Stop the running trials the pruner finds behind; the search's spec and trials as read."""
    spec = spec_of(sweep)
    found = trials(sweep, spec, cache)
    rows = [trial.row for trial in found]
    for trial in found:
        if trial.job_state == JobState.RUNNING and not trial.ending:
            verdict = prune(spec, trial.row, rows)
            if verdict is not None:
                _stop_pruned(trial, spec, verdict)
    return spec, found


def make_trials(sweep: Sweep, spec: SearchSpec, found: list[Trial]) -> None:
    """As many new trials as there is room for (`found`: the search's trials as read)."""
    if sweep.search_done:
        return
    rows = [trial.row for trial in found]
    made = len(found)
    active = sum(trial.job_state not in FINISHED_JOB_STATES for trial in found)
    room = spec.trials - made
    if sweep.max_concurrent is not None:  # (the search's maxConcurrent, else the sweep's)
        room = min(room, sweep.max_concurrent - active)
    if room > 0:
        _add_trials(sweep, spec, rows, room)
    elif made >= spec.trials:
        Sweep.objects.filter(pk=sweep.pk).update(search_done=True)


def _stop_pruned(trial: Trial, spec: SearchSpec, verdict: Pruning) -> None:
    with contextlib.suppress(JobStateError):  # (it ended meanwhile)
        lifecycle.request_pruned_stop(Job.objects.get(pk=trial.job_id), pruned_reason(spec, verdict))


def pruned_reason(spec: SearchSpec, verdict: Pruning) -> Message:
    """`pruned at step 300: loss 0.92, the median of runs at that step was 0.41`."""
    said: dict[str, str | int] = {"step": verdict.step, "metric": spec.metric, "value": _number(verdict.value)}
    if verdict.median is not None:
        return Message.of("exit.stop.pruned_median", **said, median=_number(verdict.median))
    return Message.of(
        "exit.stop.pruned_asha", **said, kept=verdict.kept, runs=verdict.runs, cutoff=_number(verdict.cutoff or 0.0)
    )


def _number(value: float) -> str:
    return f"{value:.4g}"


def _add_trials(sweep: Sweep, spec: SearchSpec, rows: list[TrialRow], count: int) -> None:
    """`count` new runs, their values asked of the trials so far, checked as any run at submit;
    none once the sweep was stopped meanwhile. A run its owner may no longer submit (its VC
    closed to them...) ends the search: no later one would pass either."""
    doc = json.loads(decrypt_text(sweep.search_document_encrypted))
    checks = SubmitChecks(sweep.owner)
    first = max((row.number for row in rows), default=-1) + 1
    runs = [Run(first + offset, values) for offset, values in enumerate(ask(spec, rows, count))]
    try:
        made = [checked_run(checks, run_document(doc, run, spec.trials), run) for run in runs]
    except JobConfigError as refused:
        log.warning("adaptive search %s: a new trial was refused (%s); ending the search", sweep.full_name, refused)
        Sweep.objects.filter(pk=sweep.pk).update(search_done=True)
        return
    with transaction.atomic():
        locked = Sweep.objects.select_for_update().select_related("owner").get(pk=sweep.pk)
        if locked.search_done:
            return
        add_runs(locked, made)
        if first + count >= spec.trials:
            Sweep.objects.filter(pk=sweep.pk).update(search_done=True)


@dataclass(frozen=True)
class SearchState:
    """What the sweep page says of its search."""

    spec: SearchSpec
    made: int
    complete: int
    running: int
    pruned: int
    failed: int
    best_run: str | None
    best_value: float | None
    best_values: dict[str, Any]


def search_state(sweep: Sweep) -> SearchState:
    spec = spec_of(sweep)
    found = trials(sweep, spec)
    rows = [trial.row for trial in found]
    count = {state: sum(row.state == state for row in rows) for state in (COMPLETE, RUNNING, PRUNED, FAILED)}
    top = best(spec, rows)
    name = next((trial.name for trial in found if top is not None and trial.row.number == top.number), None)
    return SearchState(
        spec=spec,
        made=len(rows),
        complete=count[COMPLETE],
        running=count[RUNNING],
        pruned=count[PRUNED],
        failed=count[FAILED],
        best_run=name,
        best_value=top.value if top else None,
        best_values=top.params if top else {},
    )
