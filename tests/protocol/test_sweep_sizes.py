"""A sweep's size is known before any run is built (issue 44, item 2): its runs counted from the
block (a grid's product, random samples, the sum of an array's items), and runs times each run's
size (the config with the longest values put in, references expanded) against a byte cap, so a
few hundred bytes that ask for 10^12 runs are refused at once, allocating almost nothing."""

from __future__ import annotations

import tracemalloc
from typing import Any

import pytest
import yaml

from jobs.protocol import JobConfigError
from jobs.protocol.sweeps import MAX_RUNS, MAX_SWEEP_BYTES, plan

CONFIG = """protocolVersion: 2
name: lrs
type: job
prerequisites:
  - {name: image, type: dockerimage, uri: pai-portal/base:latest}
parameters: {lr: 1}
taskRoles:
  main:
    instances: 1
    dockerImage: image
    resourcePerInstance: {cpu: 1, memoryMB: 256, gpu: 0}
    commands: ["echo <% $parameters.lr %>"]
"""
TEN = list(range(10))


def doc_with(sweep: Any, **top: Any) -> dict[str, Any]:
    doc = yaml.safe_load(CONFIG)
    doc.update(top)
    doc["extras"] = {"sweep": sweep}
    return doc


def refusal(sweep: Any, **top: Any) -> tuple[str, str]:
    with pytest.raises(JobConfigError) as refused:
        plan(doc_with(sweep, **top))
    [error] = refused.value.english
    return error


def trillion_point_grid() -> dict[str, Any]:
    return {"grid": {f"p{i}": TEN for i in range(12)}}


def test_it_refuses_a_trillion_point_grid_naming_the_field_and_the_size():
    assert refusal(trillion_point_grid()) == ("extras.sweep.grid", f"1000000000000 runs, at most {MAX_RUNS}")


def test_it_refuses_a_trillion_point_grid_allocating_under_10_mb():
    doc = doc_with(trillion_point_grid())
    tracemalloc.start()
    try:
        with pytest.raises(JobConfigError):
            plan(doc)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 10 * 1024 * 1024


def test_it_refuses_a_million_random_samples_before_drawing_one():
    sweep = {"random": {"samples": 1_000_000, "parameters": {"lr": {"min": 0.1, "max": 1}}}}
    tracemalloc.start()
    try:
        error = refusal(sweep)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert error == ("extras.sweep.random.samples", f"1000000 runs, at most {MAX_RUNS}")
    assert peak < 1024 * 1024


def test_it_caps_the_sum_of_an_arrays_items_not_each_item():
    assert refusal({"array": "0-9999,0-9999"}) == ("extras.sweep.array", f"20000 runs, at most {MAX_RUNS}")


def test_it_refuses_an_array_of_more_items_than_runs_allowed_without_reading_them_all():
    items = ",".join(["0"] * (MAX_RUNS + 1))
    assert refusal({"array": items}) == ("extras.sweep.array", f"at least {MAX_RUNS + 1} runs, at most {MAX_RUNS}")


def test_it_plans_a_sweep_of_exactly_the_most_runs():
    assert len(plan(doc_with({"array": f"0-{MAX_RUNS - 1}"})).runs) == MAX_RUNS


def test_it_refuses_runs_times_a_long_config_past_the_byte_cap():
    long_command = "echo " + "x" * 10_000
    doc = doc_with({"array": "0-9999"})
    doc["taskRoles"]["main"]["commands"] = [long_command]
    with pytest.raises(JobConfigError) as refused:
        plan(doc)
    [(field, message)] = refused.value.english
    assert field == "extras.sweep"
    assert message.startswith("10000 runs of up to ") and message.endswith(
        f"MB in all, at most {MAX_SWEEP_BYTES // (1024 * 1024)} MB (fewer runs, or a shorter config)"
    )


def test_it_counts_a_long_value_once_per_reference_in_a_runs_size():
    """A few KB of config, but each run's commands name a 12 KB value a hundred times: 1.2 MB a run."""
    doc = doc_with({"array": "0-99"}, parameters={"blob": "x" * 12_000})
    doc["taskRoles"]["main"]["commands"] = ["<% $parameters.blob %>" * 100]
    with pytest.raises(JobConfigError) as refused:
        plan(doc)
    [(field, message)] = refused.value.english
    assert field == "extras.sweep" and message.startswith("100 runs of up to 1.2 MB each")


def test_it_takes_the_longest_value_of_a_grid_for_a_runs_size():
    sweep = {"grid": {"lr": ["1", "y" * 5000]}, "maxConcurrent": 1}
    doc = doc_with(sweep)
    doc["taskRoles"]["main"]["commands"] = ["<% $parameters.lr %>" * 4000]
    with pytest.raises(JobConfigError) as refused:
        plan(doc)
    assert refused.value.english[0][1].startswith("2 runs of up to 19.")


@pytest.mark.parametrize(
    ("spec", "field"),
    [
        ({"samples": 2, "seed": [1, 2], "parameters": {"lr": {"min": 0, "max": 1}}}, "extras.sweep.random.seed"),
        (
            {"samples": 2, "parameters": {"n": {"min": 1.2, "max": 1.8, "integer": True}}},
            "extras.sweep.random.parameters.n",
        ),
    ],
)
def test_it_refuses_a_random_sweep_it_cannot_draw_naming_the_field(spec, field):
    assert refusal({"random": spec})[0] == field
