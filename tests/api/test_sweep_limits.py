"""A sweep too big to make is refused before a run is built (issue 44, item 2): a 400 naming the
field and the size, the request costing almost no memory (it used to build every run first: a
479-byte grid of 10^6 points took a worker to 537 MB, a 10^10 one to the OOM killer)."""

from __future__ import annotations

import tracemalloc

from jobs.models import Job, Sweep
from tests.factories import v2_yaml

GRID = "{" + ", ".join(f"p{i}: [0,1,2,3,4,5,6,7,8,9]" for i in range(12)) + "}"  # 10^12 points
TRILLION = v2_yaml("huge", extra=f"extras:\n  sweep:\n    grid: {GRID}\n")


def test_it_answers_400_to_a_trillion_point_grid_naming_the_field_and_the_size(submit_yaml):
    answer = submit_yaml(TRILLION)
    assert answer.status_code == 400
    [error] = answer.json()["errors"]
    assert error == {
        "field": "extras.sweep.grid",
        "message": "1000000000000 runs, at most 10000",
        "code": "config.sweep.runs",
        "params": {"count": 1000000000000, "most": 10000},
    }
    assert not Sweep.objects.exists() and not Job.objects.exists()


def test_it_refuses_a_trillion_point_grid_allocating_under_10_mb(submit_yaml):
    submit_yaml(v2_yaml("warm-up"))  # (the first request imports and caches what every request uses)
    tracemalloc.start()
    try:
        answer = submit_yaml(TRILLION)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert answer.status_code == 400
    assert peak < 10 * 1024 * 1024
