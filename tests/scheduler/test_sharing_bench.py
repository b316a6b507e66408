"""bench/sharing.py on a tiny trace (16 GPUs, 20 jobs): the simulation's invariants hold, through
the real scheduler passes on the test database (issue 30)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from bench import sharing

RUNS: dict[str, Any] = {}  # the simulation's results, plain values: run once for the module


@pytest.fixture
def tiny_runs(db, settings, tmp_path) -> list[sharing.Run]:
    """Both policies over one trace of 16 GPUs and 20 jobs (a few seconds), once for the module.
    The tests that read it are `slow` (CI's, not `make fast`'s): the run was the fast tier's largest
    single cost (~6 s of CPU); the small scenarios below stay in both."""
    if "runs" not in RUNS:
        settings.PAI_WORK_ROOT = tmp_path / "work"
        settings.PAI_LOG_DIR = tmp_path / "logs"
        settings.PAI_FS_ROOT = tmp_path / "fs"
        trace = sharing.generate(gpus=16, jobs=20, seed=3)
        RUNS["runs"] = sharing.simulate(trace, [sharing.POLICIES["strict"], sharing.POLICIES["sharing"]], gpus=16)
    return RUNS["runs"]


@pytest.mark.slow
def test_it_never_gives_a_gpu_twice(tiny_runs):
    assert [run.over_allocations for run in tiny_runs] == [0, 0]


@pytest.mark.slow
def test_it_ends_every_job_of_the_trace(tiny_runs):
    assert [(run.jobs_ended, run.jobs) for run in tiny_runs] == [(20, 20), (20, 20)]


@pytest.mark.slow
def test_it_keeps_strict_within_each_vcs_quota(tiny_runs):
    assert tiny_runs[0].policy == "strict"
    assert tiny_runs[0].quota_overruns == 0


@pytest.mark.slow
def test_it_times_every_pass_and_measures_utilisation(tiny_runs):
    for run in tiny_runs:
        assert run.passes > 10
        assert 0 < run.pass_ms[0] <= run.pass_ms[1] <= run.pass_ms[2]
        assert 0 < run.utilisation_all <= 1
        assert run.utilisation_queued is None or 0 < run.utilisation_queued <= 1


@pytest.mark.slow
def test_it_bounds_what_a_queue_order_alone_could_add_while_jobs_wait(tiny_runs):
    for run in tiny_runs:
        if run.utilisation_queued is not None:
            assert run.utilisation_queued <= run.utilisation_queued_bound <= 1


@pytest.mark.slow
def test_it_reports_features_missing_from_the_build_as_not_available(tiny_runs):
    table = dict(sharing.rows(tiny_runs))
    built = sharing.in_build()
    strict, shared = table["sharing features"]
    assert strict == "none"
    assert ("borrowing: n/a" in shared) == (not built["borrowing"])
    assert (table["preemptions"][1] == "n/a") == (not built["preemption"])


def test_it_reads_back_a_trace_it_wrote(tmp_path: Path):
    trace = sharing.generate(gpus=64, jobs=30, seed=5)
    trace.dump(tmp_path / "trace.jsonl")
    assert sharing.Trace.load(tmp_path / "trace.jsonl") == trace


def test_it_generates_gangs_that_fit_their_vcs_quota():
    trace = sharing.generate(gpus=2000, jobs=400, seed=1)
    quotas = {vc.name: int(2000 * vc.share / 100) for vc in trace.vcs}
    assert all(job.total_gpus <= quotas[job.vc] for job in trace.jobs)
    assert {job.tasks for job in trace.jobs} >= {1, 16}
    assert {job.gpus for job in trace.jobs} == {1, 2, 4, 8}
    assert {job.job_class for job in trace.jobs} == {"prod", "test", "oppo"}


def test_it_preempts_while_another_vc_places_a_job_in_the_same_pass(db, settings, tmp_path):
    """A prod job of VC a preempts a's test job in the pass that places VC b's job: the pass used to
    fail (preemption looked up b's placed job among a's requests only) and so did every pass after."""
    settings.PAI_WORK_ROOT = tmp_path / "work"
    vcs = [sharing.TraceVc("vc-a", 50), sharing.TraceVc("vc-b", 50)]

    def job(name: str, vc: str, job_class: str, arrival: float, gpus: int) -> sharing.TraceJob:
        return sharing.TraceJob(name, vc, f"{vc}-u0", job_class, arrival, 1, gpus, 3600, 5)

    trace = sharing.Trace(vcs, [job("low", "vc-a", "test", 0, 8), job("high", "vc-a", "prod", 100, 8)])
    trace.jobs.append(job("other", "vc-b", "test", 100, 4))
    (run,) = sharing.simulate(trace, [sharing.POLICIES["sharing"]], gpus=16)
    assert (run.jobs_ended, run.preemptions, run.lost_gpu_hours) == (3, 1, 0)
    assert run.reclaim_s is not None and run.reclaim_s[2] <= settings.PAI_GRACE_SECONDS + sharing.DEFAULT_TICK_S


def test_it_lets_oppo_borrow_an_idle_vc_and_its_owner_reclaim_it_within_the_grace(db, settings, tmp_path):
    settings.PAI_WORK_ROOT = tmp_path / "work"
    vcs = [sharing.TraceVc("vc-a", 50), sharing.TraceVc("vc-b", 50)]
    jobs = [
        sharing.TraceJob("mine", "vc-a", "vc-a-u0", "oppo", 0, 1, 8, 3600, 5),
        sharing.TraceJob("borrows", "vc-a", "vc-a-u1", "oppo", 0, 1, 8, 3600, 5),
        sharing.TraceJob("owner", "vc-b", "vc-b-u0", "test", 600, 1, 8, 3600, 5),
    ]
    (run,) = sharing.simulate(sharing.Trace(vcs, jobs), [sharing.POLICIES["sharing"]], gpus=16)
    assert run.features["borrowing"] is True
    assert (run.jobs_ended, run.over_allocations, run.preemptions, run.lost_gpu_hours) == (3, 0, 1, 0)
    assert run.quota_overruns > 0 and run.quota_overruns_allowed  # vc-a held 16 GPUs of its 8 meanwhile
    assert run.reclaim_s is not None and run.reclaim_s[2] <= settings.PAI_GRACE_SECONDS + sharing.DEFAULT_TICK_S


def test_it_holds_the_room_a_preemption_frees_for_the_job_that_asked(db, settings, tmp_path):
    """Another VC's `prod` job, earlier in the order (submitted first, its user's usage 0) and
    waiting for a node with 4 GPUs free (within its quota, so it preempts nothing), used to take the
    room a preempted job freed in the pass it came free, before the preemptor: which then waited for
    a job to end (3,500 s here). Now the preemptor is placed first in that pass."""
    settings.PAI_WORK_ROOT = tmp_path / "work"
    vcs = [sharing.TraceVc("vc-a", 25), sharing.TraceVc("vc-b", 75)]  # 8 and 24 of 4 nodes x 8 GPUs

    def job(name: str, vc: str, job_class: str, arrival: float, gpus: int, user: str = "u0") -> sharing.TraceJob:
        return sharing.TraceJob(name, vc, f"{vc}-{user}", job_class, arrival, 1, gpus, 3600, 5)

    jobs = [
        job("b1", "vc-b", "prod", 0, 6),
        job("b2", "vc-b", "prod", 0, 6),
        job("b3", "vc-b", "prod", 0, 8),
        job("a-low", "vc-a", "test", 0, 2),  # with b1 or b2: that node full
        job("a-x", "vc-a", "test", 0, 6),  # a node of its own, 2 GPUs left: vc-a's quota full
        job("b-grab", "vc-b", "prod", 50, 4, "u1"),  # 4 of vc-b's quota free, no node with 4 GPUs free
        job("a-prod", "vc-a", "prod", 100, 6),  # preempts a-x (a-low alone is not enough)
    ]
    (run,) = sharing.simulate(sharing.Trace(vcs, jobs), [sharing.POLICIES["sharing"]], gpus=32)
    assert (run.jobs_ended, run.over_allocations, run.preemptions, run.lost_gpu_hours) == (7, 0, 1, 0)
    assert run.reclaim_s is not None and run.reclaim_s[2] <= settings.PAI_GRACE_SECONDS + sharing.DEFAULT_TICK_S


def test_it_keeps_the_room_a_victim_freed_early_for_the_job_that_asked(db, settings, tmp_path):
    """a-prod preempts both of vc-a's test jobs on one node; one saves in 1 s, the other in 25. The
    4 GPUs the first frees used to go to vc-b's b-grab (waiting for a node with 4 GPUs free, within
    its quota), and a-prod then waited for b-grab to end (an hour). Now that room is kept for it."""
    settings.PAI_WORK_ROOT = tmp_path / "work"
    vcs = [sharing.TraceVc("vc-a", 25), sharing.TraceVc("vc-b", 75)]  # 8 and 24 of 4 nodes x 8 GPUs

    def job(name: str, vc: str, job_class: str, arrival: float, gpus: int, save_s: float = 5) -> sharing.TraceJob:
        return sharing.TraceJob(name, vc, f"{vc}-{name}", job_class, arrival, 1, gpus, 3600, save_s)

    jobs = [
        job("b1", "vc-b", "prod", 0, 6),
        job("b2", "vc-b", "prod", 0, 6),
        job("b3", "vc-b", "prod", 0, 8),
        job("a-quick", "vc-a", "test", 0, 4, save_s=1),
        job("a-slow", "vc-a", "test", 0, 4, save_s=25),
        job("b-grab", "vc-b", "prod", 50, 4),  # 4 of vc-b's quota free, no node with 4 GPUs free
        job("a-prod", "vc-a", "prod", 100, 8),  # needs both a-quick and a-slow gone
    ]
    (run,) = sharing.simulate(sharing.Trace(vcs, jobs), [sharing.POLICIES["sharing"]], gpus=32)
    assert (run.jobs_ended, run.over_allocations, run.preemptions, run.lost_gpu_hours) == (7, 0, 2, 0)
    assert run.reclaim_s is not None and run.reclaim_s[2] <= settings.PAI_GRACE_SECONDS + sharing.DEFAULT_TICK_S
