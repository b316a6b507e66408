"""Adaptive search (`extras.sweep.search`, jobs/sweep_search.py) with the real scheduler, the
sampler's metrics reader and its search duty over process tasks: trials made as slots free and
the best one found, a run behind pruned (STOPPED, with why, not failed), and a search that goes
on from the stored runs alone, as after a restart."""

import re
import time

import pytest
import yaml
from django.test import Client

from jobs import sweep_search
from jobs.models import JobState, MetricPoint, Sweep
from jobs.protocol.search import ask
from jobs.protocol.search_spec import read_search
from jobs.sweep_search import advance, advance_searches, search_state
from jobs.sweeps import runs, stop_sweep, submit_sweep
from scheduling.training_metrics import MetricReader
from tests.factories import default_image

# Each run reports loss = (x - 2)^2 + 1 at steps 1..3, `pause` seconds apart.
REPORTS = (
    "awk -v x=<% $parameters.x %> 'BEGIN {{ for (s = 1; s <= 3; s++) {{ "
    'printf "PAI_METRIC {{\\"step\\": %d, \\"loss\\": %g}}\\n", s, (x - 2) ^ 2 + 1; fflush(); '
    'system("sleep {pause}") }} }}\''
)


def search_text(search: str, pause: float = 0.1) -> str:
    command = REPORTS.format(pause=pause)
    return f"""protocolVersion: 2
name: hunt
type: job
prerequisites:
  - {{name: image, type: dockerimage, uri: {default_image()}}}
parameters: {{x: 0}}
taskRoles:
  main:
    instances: 1
    dockerImage: image
    resourcePerInstance: {{cpu: 1, memoryMB: 256, gpu: 0}}
    commands:
      - |
        {command}
extras:
  sweep:
    search: {search}
"""


GRID4 = "{algorithm: grid, metric: loss, trials: 4, maxConcurrent: 2, parameters: {x: [0, 1, 2, 3]}}"


def drive(scheduler, sweep: Sweep, timeout: float = 120.0) -> None:
    """The scheduler's passes and the sampler's metrics and search duties, until every trial ended
    (a time budget: a count of passes is none, an idle pass takes half a millisecond)."""
    reader, deadline, states = MetricReader(), time.monotonic() + timeout, list[str]()
    while time.monotonic() < deadline:
        time.sleep(0.01)
        scheduler.run_once()
        reader.read()
        advance_searches()
        sweep.refresh_from_db()
        states = list(runs(sweep).values_list("state", flat=True))
        if sweep.search_done and all(
            state in (JobState.SUCCEEDED, JobState.FAILED, JobState.STOPPED) for state in states
        ):
            return
    raise AssertionError(f"the search did not end: {states}")


def test_it_makes_its_trials_as_slots_free_and_finds_the_best(user, process_node, scheduler):
    sweep = submit_sweep(user, search_text(GRID4, pause=0))  # (an ended run's lines are read too)
    assert runs(sweep).count() == 2  # (the first as many as run at once)

    drive(scheduler, sweep)

    state = search_state(sweep)
    assert [job.state for job in runs(sweep)] == [JobState.SUCCEEDED] * 4
    assert sorted(job.sweep_values["x"] for job in runs(sweep)) == [0, 1, 2, 3]
    assert (state.complete, state.best_values, state.best_value) == (4, {"x": 2}, 1.0)


def seed_trying_first(block: str, x: int) -> int:
    """A seed whose grid tries `x` first (a grid's order is its seed's)."""
    read = yaml.safe_load(block)
    return next(seed for seed in range(100) if ask(read_search({**read, "seed": seed}), [], 1)[0]["x"] == x)


@pytest.mark.slow
def test_it_stops_a_run_behind_the_median_as_stopped_with_why(user, process_node, scheduler):
    block = "{algorithm: grid, metric: loss, trials: 2, maxConcurrent: 1, parameters: {x: [2, 5]}}"
    seed = seed_trying_first(block, 2)
    pruned = block[:-1] + f", seed: {seed}, pruner: {{kind: median, minTrials: 1}}}}"
    sweep = submit_sweep(user, search_text(pruned, pause=1))

    drive(scheduler, sweep)

    good, bad = runs(sweep)
    assert (good.sweep_values, good.state) == ({"x": 2}, JobState.SUCCEEDED)
    assert (bad.sweep_values, bad.state) == ({"x": 5}, JobState.STOPPED)
    assert re.search(r"pruned at step \d: loss 10, the median of runs at that step was 1", bad.exit_diagnostics)
    state = search_state(sweep)
    assert (state.pruned, state.failed, state.best_run) == (1, 0, good.name)


def finish(job, losses: list[float]) -> None:
    """A run that ended SUCCEEDED having reported `losses` at steps 1.. (as the sampler stores)."""
    task = job.tasks.get()
    MetricPoint.objects.bulk_create(
        MetricPoint(job=job, task=task, name="loss", step=step, value=value, at=0)
        for step, value in enumerate(losses, start=1)
    )
    type(job).objects.filter(pk=job.pk).update(state=JobState.SUCCEEDED)


def test_it_goes_on_from_the_stored_runs_alone_after_a_restart(user, default_vc):
    sweep = submit_sweep(user, search_text(GRID4))
    for job in runs(sweep):
        finish(job, [5.0, (job.sweep_values["x"] - 2) ** 2 + 1])

    advance(Sweep.objects.get(pk=sweep.pk))  # (a new process: nothing but the rows)

    assert sorted(job.sweep_values["x"] for job in runs(sweep)) == [0, 1, 2, 3]
    assert [job.name for job in runs(sweep)] == ["hunt-0", "hunt-1", "hunt-2", "hunt-3"]
    assert Sweep.objects.get(pk=sweep.pk).search_done


def test_it_makes_no_trial_once_the_sweep_was_stopped(user, default_vc):
    sweep = submit_sweep(user, search_text(GRID4))
    stop_sweep(sweep, user)
    for job in runs(sweep):
        type(job).objects.filter(pk=job.pk).update(state=JobState.STOPPED)

    advance(Sweep.objects.get(pk=sweep.pk))

    assert runs(sweep).count() == 2


def test_its_page_shows_the_trials_by_state_and_the_best_so_far(user, default_vc):
    sweep = submit_sweep(user, search_text(GRID4))
    first = runs(sweep)[0]
    finish(first, [5.0, (first.sweep_values["x"] - 2) ** 2 + 1])
    client = Client()
    client.force_login(user)

    page = client.get(f"/sweeps/{sweep.full_name}/", HTTP_ACCEPT_LANGUAGE="en").content.decode()

    said = page.split("data-search-state>")[1].split("</section>")[0]
    assert "2 of 4 made" in said
    assert "data-search-done>1<" in said and "data-search-running>1<" in said
    best = said.split("data-search-best>")[1].split("</p>")[0]
    assert f">{first.name}</a>" in best and f"x={first.sweep_values['x']}" in best


def test_the_sweeps_own_cap_holds_when_the_search_has_none(user, default_vc):
    uncapped = GRID4.replace(", maxConcurrent: 2", "")
    sweep = submit_sweep(user, search_text(uncapped).replace("    search:", "    maxConcurrent: 1\n    search:"))
    finish(runs(sweep)[0], [1.0])

    advance(Sweep.objects.get(pk=sweep.pk))

    assert runs(sweep).count() == 2


def test_the_duty_stops_every_searchs_runs_behind_before_it_asks_any_for_new_values(user, default_vc, monkeypatch):
    asha = "{algorithm: grid, metric: loss, trials: 6, maxConcurrent: 3, parameters: {x: [0, 1, 2, 3, 4, 5]}, "
    asha += "pruner: {kind: asha}}"
    for name in ("hunt", "chase"):
        best, *behind = runs(submit_sweep(user, search_text(asha).replace("name: hunt", f"name: {name}")))
        finish(best, [0.1])
        for job in behind:  # (reported a worse value at the first rung, still running)
            MetricPoint.objects.create(job=job, task=job.tasks.get(), name="loss", step=1, value=0.9, at=1)
            type(job).objects.filter(pk=job.pk).update(state=JobState.RUNNING)
    said: list[str] = []
    stop, ask_for = sweep_search.lifecycle.request_pruned_stop, sweep_search.ask

    def stopping(*args):
        said.append("stop")
        return stop(*args)

    def asking(*args):
        said.append("ask")
        return ask_for(*args)

    monkeypatch.setattr(sweep_search.lifecycle, "request_pruned_stop", stopping)
    monkeypatch.setattr(sweep_search, "ask", asking)

    advance_searches()

    assert said == ["stop"] * 4 + ["ask"] * 2
