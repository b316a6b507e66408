"""`GET /api/v2/sweeps/<sweep>` answers an adaptive search's state (web/api/views/sweeps.py):
its spec, its trials by how they stand and its best run so far."""

from jobs.models import JobState
from jobs.sweeps import runs, submit_sweep
from tests.experiments.test_adaptive_search import GRID4, finish, search_text


def test_it_answers_a_searchs_trials_and_best_run(client, user, default_vc):
    sweep = submit_sweep(user, search_text(GRID4))
    first = runs(sweep)[0]
    finish(first, [5.0, (first.sweep_values["x"] - 2) ** 2 + 1])
    client.force_login(user)

    answer = client.get(f"/api/v2/sweeps/{sweep.full_name}").json()

    assert answer["search"] == {
        "algorithm": "grid",
        "metric": "loss",
        "goal": "minimize",
        "trials": 4,
        "maxConcurrent": 2,
        "pruner": None,
        "made": 2,
        "ended": False,
        "done": 1,
        "running": 1,
        "pruned": 0,
        "failed": 0,
        "best": {"run": first.name, "value": (first.sweep_values["x"] - 2) ** 2 + 1, "params": first.sweep_values},
    }


def test_it_counts_a_failed_run_as_failed_not_as_a_value(client, user, default_vc):
    sweep = submit_sweep(user, search_text(GRID4))
    runs(sweep).update(state=JobState.FAILED)
    client.force_login(user)

    search = client.get(f"/api/v2/sweeps/{sweep.full_name}").json()["search"]

    assert (search["failed"], search["done"], search["best"]) == (2, 0, None)


def test_it_answers_no_search_for_a_grid_sweep(client, user, default_vc):
    grid = search_text(GRID4).replace("    search: " + GRID4, "    grid: {x: [0, 1]}")
    sweep = submit_sweep(user, grid)
    client.force_login(user)

    assert client.get(f"/api/v2/sweeps/{sweep.full_name}").json()["search"] is None
