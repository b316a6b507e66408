"""The adaptive search's pure part (jobs/protocol/search.py, search_spec.py): the search block
checked with field-named errors, the next trials drawn from rows alone, and the pruners'
verdicts. No database: the same rows give the same answer, whatever asked before."""

import pytest

from jobs.protocol.errors import JobConfigError
from jobs.protocol.search import COMPLETE, FAILED, PRUNED, RUNNING, TrialRow, ask, best, prune
from jobs.protocol.search_spec import read_search


def spec(**changes):
    block = {
        "algorithm": "tpe",
        "metric": "loss",
        "trials": 16,
        "maxConcurrent": 2,
        "seed": 1,
        "parameters": {"x": {"min": -5, "max": 5}, "opt": {"choice": ["adam", "sgd"]}},
    }
    return read_search({**block, **changes})


def refusal(**changes) -> tuple[str, str]:
    with pytest.raises(JobConfigError) as refused:
        spec(**changes)
    field, message = refused.value.errors[0]
    return field, str(message)


def quadratic_rows(count: int) -> list[TrialRow]:
    """Completed trials of (x - 2)^2 at x spread over the range."""
    xs = [-5 + 10 * i / (count - 1) for i in range(count)]
    return [TrialRow(i, {"x": x, "opt": "adam"}, COMPLETE, (x - 2) ** 2) for i, x in enumerate(xs)]


def test_it_names_the_field_of_a_bad_trial_count():
    assert refusal(trials=0) == ("extras.sweep.search.trials", "must be >= 1")


def test_it_refuses_an_unknown_algorithm_naming_the_known_ones():
    assert refusal(algorithm="bayes") == ("extras.sweep.search.algorithm", "must be one of: tpe, random, grid")


def test_it_refuses_a_grid_search_over_a_range():
    field, _ = refusal(algorithm="grid")
    assert field == "extras.sweep.search.parameters.x"


def test_it_refuses_more_grid_trials_than_points():
    assert refusal(algorithm="grid", parameters={"x": [1, 2, 3]}) == (
        "extras.sweep.search.trials",
        "must be <= 3, the points of the grid",
    )


def test_it_refuses_an_unknown_pruner_setting():
    field, _ = refusal(pruner={"kind": "asha", "eta": 3})
    assert field == "extras.sweep.search.pruner.eta"


def test_it_asks_the_same_values_of_the_same_rows():
    rows = quadratic_rows(12)

    assert ask(spec(), rows, 2) == ask(spec(), rows, 2)


def test_it_asks_values_inside_the_space():
    for values in ask(spec(algorithm="random"), [], 20):
        assert -5 <= values["x"] <= 5 and values["opt"] in ("adam", "sgd")


def test_it_asks_distinct_values_of_trials_asked_together():
    asked = ask(spec(), [], 4)

    assert len({values["x"] for values in asked}) == 4


def test_tpe_asks_near_the_optimum_once_it_has_results():
    asked = ask(spec(), quadratic_rows(20), 8)

    assert sum(abs(values["x"] - 2) < 2 for values in asked) >= 5


def test_it_asks_a_grid_point_by_point_without_repeating():
    grid = spec(algorithm="grid", trials=4, parameters={"a": [1, 2], "b": ["p", "q"]})
    rows: list[TrialRow] = []
    for number in range(4):
        (values,) = ask(grid, rows, 1)
        rows.append(TrialRow(number, values, RUNNING))

    assert sorted((row.params["a"], row.params["b"]) for row in rows) == [(1, "p"), (1, "q"), (2, "p"), (2, "q")]


def test_a_failed_trial_has_no_value_and_is_not_the_best():
    rows = [TrialRow(0, {"x": 2.0, "opt": "adam"}, FAILED), TrialRow(1, {"x": 4.0, "opt": "adam"}, COMPLETE, 4.0)]

    assert best(spec(), rows) == rows[1]
    assert len(ask(spec(), rows, 1)) == 1  # (a FAIL trial is read, not refused)


def curve(values: list[float]) -> dict[int, float]:
    return dict(enumerate(values))


def test_the_median_pruner_stops_a_run_behind_the_median_at_its_step():
    median = spec(pruner={"kind": "median", "minTrials": 3})
    done = [TrialRow(i, {}, COMPLETE, 0.1, curve([1.0, 0.5, at_2, 0.1])) for i, at_2 in enumerate([0.4, 0.41, 0.42])]
    behind = TrialRow(3, {}, RUNNING, curve=curve([1.0, 0.9, 0.92]))

    pruning = prune(median, behind, done)

    assert pruning is not None and (pruning.step, pruning.value, pruning.median) == (2, 0.92, 0.41)


def test_the_median_pruner_lets_a_run_ahead_go_on():
    median = spec(pruner={"kind": "median", "minTrials": 3})
    done = [TrialRow(i, {}, COMPLETE, 0.1, curve([1.0, 0.5, 0.4])) for i in range(3)]

    assert prune(median, TrialRow(3, {}, RUNNING, curve=curve([1.0, 0.3])), done) is None


def test_the_median_pruner_waits_for_enough_completed_runs():
    median = spec(pruner={"kind": "median", "minTrials": 3})
    done = [TrialRow(i, {}, COMPLETE, 0.1, curve([0.1, 0.1])) for i in range(2)]

    assert prune(median, TrialRow(3, {}, RUNNING, curve=curve([1.0, 0.9])), done) is None


def test_asha_keeps_only_the_best_third_at_a_rung():
    asha = spec(pruner={"kind": "asha", "minStep": 3, "reductionFactor": 3})
    others = [TrialRow(i, {}, PRUNED if i else COMPLETE, None, {3: v}) for i, v in enumerate([0.2, 0.3, 0.5, 0.6, 0.7])]

    cut = prune(asha, TrialRow(9, {}, RUNNING, curve={1: 1.0, 3: 0.4}), others)
    kept = prune(asha, TrialRow(9, {}, RUNNING, curve={1: 1.0, 3: 0.25}), others)

    assert cut is not None and (cut.step, cut.value, cut.cutoff, cut.kept, cut.runs) == (3, 0.4, 0.3, 2, 6)
    assert kept is None


def test_asha_judges_nothing_before_the_first_rung():
    asha = spec(pruner={"kind": "asha", "minStep": 3})
    others = [TrialRow(0, {}, COMPLETE, 0.1, {1: 0.1, 3: 0.1})]

    assert prune(asha, TrialRow(1, {}, RUNNING, curve={1: 9.0}), others) is None


def reported(number: int, values: dict[int, float], read_at: int, state: str = RUNNING) -> TrialRow:
    """A run whose steps were all read at `read_at` (the sampler's pass that read them)."""
    return TrialRow(number, {}, state, curve=values, read_at=dict.fromkeys(values, read_at))


def test_asha_judges_a_run_at_a_rung_against_the_runs_that_reached_it_before():
    asha = spec(pruner={"kind": "asha", "minStep": 3, "reductionFactor": 3})
    before = [reported(i, {3: value}, read_at=10, state=PRUNED) for i, value in enumerate([0.5, 0.6])]
    run = reported(5, {3: 0.4}, read_at=20)

    assert prune(asha, run, before) is None  # (the best of 3)


def test_asha_never_judges_a_run_again_at_a_rung_it_was_kept_at():
    asha = spec(pruner={"kind": "asha", "minStep": 3, "reductionFactor": 3})
    before = [reported(i, {3: value}, read_at=10, state=PRUNED) for i, value in enumerate([0.5, 0.6])]
    after = [reported(i, {3: 0.1, 4: 0.1}, read_at=30) for i in range(2, 5)]  # (better, but later)
    run = TrialRow(5, {}, RUNNING, curve={3: 0.4, 4: 0.38, 5: 0.37}, read_at={3: 20, 4: 30, 5: 40})

    assert prune(asha, run, before + after) is None


def test_asha_judges_a_kept_run_again_as_it_reaches_its_next_rung():
    asha = spec(pruner={"kind": "asha", "minStep": 1, "reductionFactor": 3})
    ahead = [reported(i, {1: 0.5, 3: 0.1}, read_at=10) for i in range(3)]
    run = TrialRow(5, {}, RUNNING, curve={1: 0.4, 3: 0.3}, read_at={1: 5, 3: 20})  # (first at step 1)

    cut = prune(asha, run, ahead)

    assert cut is not None and (cut.step, cut.value, cut.kept, cut.runs) == (3, 0.3, 1, 4)


def test_asha_judges_the_runs_that_reached_a_rung_in_one_read_together():
    asha = spec(pruner={"kind": "asha", "minStep": 3, "reductionFactor": 3})
    wave = [reported(i, {3: 0.1 * (i + 1)}, read_at=10) for i in range(6)]

    verdicts = [prune(asha, run, wave) for run in wave]

    assert [verdict is None for verdict in verdicts] == [True, True, False, False, False, False]


def test_asha_counts_a_run_that_failed_after_it_reached_the_rung():
    asha = spec(pruner={"kind": "asha", "minStep": 3, "reductionFactor": 3})
    there = [reported(i, {3: value}, read_at=10, state=FAILED) for i, value in enumerate([0.1, 0.2])]

    cut = prune(asha, reported(5, {3: 0.3}, read_at=20), there)

    assert cut is not None and (cut.kept, cut.runs) == (1, 3)
