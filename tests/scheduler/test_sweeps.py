"""Sweeps (`extras.sweep`): one submit, many runs, run with real process tasks and the real
scheduler loop, never more at once than the sweep's maxConcurrent."""

import pytest

from jobs.models import JobState
from jobs.protocol import JobConfigError
from jobs.sweeps import resubmit_failed, runs, stop_sweep, submit_sweep
from scheduling.launch import log_path_for
from tests.factories import default_image
from tests.scheduler.conftest import passes_until

SAYS_VALUES = 'echo "values lr=<% $parameters.lr %> seed=<% $parameters.seed %>"'


def sweep_text(sweep: str, command: str = SAYS_VALUES) -> str:
    return f"""protocolVersion: 2
name: lrs
type: job
prerequisites:
  - {{name: image, type: dockerimage, uri: {default_image()}}}
parameters: {{lr: 1, seed: 0}}
taskRoles:
  main:
    instances: 1
    dockerImage: image
    resourcePerInstance: {{cpu: 1, memoryMB: 256, gpu: 0}}
    commands:
      - {command!r}
extras:
  sweep: {sweep}
"""


GRID = "{grid: {lr: [0.1, 0.01, 0.001], seed: [1, 2]}, maxConcurrent: 2}"


@pytest.mark.slow
def test_it_runs_a_3x2_grid_two_at_a_time_each_run_with_its_values(user, process_node, scheduler):
    sweep = submit_sweep(user, sweep_text(GRID, SAYS_VALUES + "; sleep 0.5"))
    running = list[int]()

    def ended() -> bool:
        states = list(runs(sweep).values_list("state", flat=True))
        running.append(states.count(JobState.RUNNING))
        return all(state in (JobState.SUCCEEDED, JobState.FAILED) for state in states)

    passes_until(scheduler, ended)
    jobs = list(runs(sweep))
    assert [job.state for job in jobs] == [JobState.SUCCEEDED] * 6
    assert max(running) == 2
    said = {job.name: log_path_for(job, job.tasks.get()).read_text().strip() for job in jobs}
    assert said == {
        "lrs-0": "values lr=0.1 seed=1",
        "lrs-1": "values lr=0.1 seed=2",
        "lrs-2": "values lr=0.01 seed=1",
        "lrs-3": "values lr=0.01 seed=2",
        "lrs-4": "values lr=0.001 seed=1",
        "lrs-5": "values lr=0.001 seed=2",
    }


def test_it_stops_every_run_of_a_sweep(user, process_node, scheduler):
    sweep = submit_sweep(user, sweep_text(GRID, "sleep 60"))
    scheduler.run_once()
    stop_sweep(sweep, user)
    passes_until(
        scheduler, lambda: all(state == JobState.STOPPED for state in runs(sweep).values_list("state", flat=True))
    )
    assert list(runs(sweep).values_list("state", flat=True)) == [JobState.STOPPED] * 6


def test_it_holds_the_runs_beyond_the_cap_saying_why(user, process_node, scheduler):
    sweep = submit_sweep(user, sweep_text(GRID, "sleep 60"))
    scheduler.run_once()
    third = runs(sweep)[2]
    assert third.held and third.pending_reason == "waiting for a slot: sweep lrs runs at most 2 at once (2 now)"
    assert third.pending_reason_messages[0]["code"] == "reason.sweep_slot"


@pytest.mark.slow
def test_it_starts_the_failed_runs_again(user, process_node, run_until):
    sweep = submit_sweep(user, sweep_text("{array: '1-3'}", "test <% $parameters.arrayIndex %> != 2"))
    for job in runs(sweep):
        run_until(job, JobState.SUCCEEDED, JobState.FAILED, timeout=30)
    states = list(runs(sweep).values_list("state", flat=True))
    assert states == [JobState.SUCCEEDED, JobState.FAILED, JobState.SUCCEEDED]
    [again] = resubmit_failed(sweep, user)
    assert again.name == "lrs-1" and again.state == JobState.WAITING and again.job_attempt == 1


def test_it_refuses_a_sweep_naming_the_field(user, process_node):
    with pytest.raises(JobConfigError) as refused:
        submit_sweep(user, sweep_text("{grid: {lr: []}}"))
    assert refused.value.english == [("extras.sweep.grid.lr", "must be a non-empty list of values")]


@pytest.mark.slow
def test_a_job_waits_for_a_whole_sweep_and_a_sweep_for_a_job(user, process_node, scheduler):
    from jobs.actions import submit_job
    from tests.scheduler.conftest import ended_in_order, role, v2_job

    prep = submit_job(user, v2_job("prep", role("main", "sleep 0.3")))
    sweep = submit_sweep(
        user,
        sweep_text("{array: '0-1'}", "sleep 0.2").replace("extras:\n", "extras:\n  dependencies: {afterok: [prep]}\n"),
    )
    report = submit_job(user, v2_job("report", role("main", "true")) + "extras:\n  dependencies: {afterok: [lrs]}\n")
    assert set(report.dependencies.values_list("depends_on__name", flat=True)) == {"lrs-0", "lrs-1"}

    def report_ended() -> bool:
        report.refresh_from_db()
        return report.state in (JobState.SUCCEEDED, JobState.FAILED)

    passes_until(scheduler, report_ended)
    prep.refresh_from_db()
    jobs = list(runs(sweep))
    assert report.state == JobState.SUCCEEDED
    assert all(ended_in_order(prep, run) and ended_in_order(run, report) for run in jobs)
