"""Fair share's decayed usage (clusters.sharing, pure)."""

import pytest

from clusters.sharing import Held, decayed_usage

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
