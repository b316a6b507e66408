"""Fair share's decayed usage and the expected starts of a VC's queue (clusters.sharing, pure)."""

import pytest

from clusters.sharing import ESTIMATED_DEPTH, Held, Queued, Running, decayed_usage, expected_starts

HOUR = 3600.0
NOW = 1_000_000.0


def test_it_counts_recent_gpu_hours_almost_whole():
    usage = decayed_usage([Held("ann", 2, NOW - 60, NOW)], NOW, half_life_s=7 * 24 * HOUR)
    assert usage["ann"] == pytest.approx(2 / 60, rel=1e-3)


def test_it_halves_usage_one_half_life_old():
    recent = decayed_usage([Held("ann", 4, NOW - HOUR, NOW)], NOW, half_life_s=10 * HOUR)["ann"]
    older = decayed_usage([Held("ann", 4, NOW - 11 * HOUR, NOW - 10 * HOUR)], NOW, half_life_s=10 * HOUR)["ann"]
    assert older == pytest.approx(recent / 2)


def test_it_counts_a_running_task_up_to_now_and_sums_per_user():
    spans = [Held("ann", 1, NOW - HOUR), Held("ann", 1, NOW - HOUR, NOW), Held("bob", 1, NOW - 2 * HOUR, NOW)]
    usage = decayed_usage(spans, NOW, half_life_s=1e12)
    assert usage == pytest.approx({"ann": 2.0, "bob": 2.0})


def test_it_ignores_empty_spans():
    assert decayed_usage([Held("ann", 0, NOW - HOUR, NOW), Held("bob", 3, NOW, NOW)], NOW, HOUR) == {}


VC = (4, 100, 100_000)
CLUSTER = (8, 100, 100_000)


def test_a_job_starts_when_enough_running_jobs_reach_their_limits():
    running = [Running((2, 1, 1), NOW + 100, "mine"), Running((2, 1, 1), NOW + 50, "mine")]
    starts = expected_starts("mine", [Queued(1, (3, 1, 1), 60)], running, VC, CLUSTER, NOW)
    assert starts == {1: NOW + 100}


def test_jobs_ahead_hold_what_they_take_from_their_own_start():
    running = [Running((4, 1, 1), NOW + 100, "mine")]
    queue = [Queued(1, (4, 1, 1), 30), Queued(2, (2, 1, 1), 30)]
    assert expected_starts("mine", queue, running, VC, CLUSTER, NOW) == {1: NOW + 100, 2: NOW + 130}


def test_it_is_unknown_behind_a_holding_without_a_limit():
    running = [Running((4, 1, 1), None, "mine")]
    queue = [Queued(1, (1, 1, 1), 30), Queued(2, (1, 1, 1), 30)]
    assert expected_starts("mine", queue, running, VC, CLUSTER, NOW) == {1: None, 2: None}


def test_other_vcs_jobs_count_only_in_the_cluster():
    running = [Running((6, 1, 1), NOW + 500, "other"), Running((1, 1, 1), NOW + 10, "mine")]
    # The VC has room at +10, the cluster only once the other VC's job ends.
    assert expected_starts("mine", [Queued(1, (3, 1, 1), 30)], running, VC, CLUSTER, NOW) == {1: NOW + 500}


def test_a_job_never_starts_before_the_one_ahead():
    running = [Running((4, 1, 1), NOW + 100, "mine"), Running((1, 1, 1), NOW + 5, "other")]
    queue = [Queued(1, (4, 1, 1), 1000), Queued(2, (0, 1, 1), 30)]
    assert expected_starts("mine", queue, running, VC, CLUSTER, NOW) == {1: NOW + 100, 2: NOW + 100}


def test_it_estimates_only_the_head_of_a_long_queue():
    running = [Running((1, 1, 1), NOW + 10, "mine")]
    queue = [Queued(key, (0, 0, 0), 1) for key in range(ESTIMATED_DEPTH + 2)]
    starts = expected_starts("mine", queue, running, VC, CLUSTER, NOW)
    assert starts[0] == NOW + 10 and starts[ESTIMATED_DEPTH + 1] is None
