"""Sweeps and job arrays (`extras.sweep`): one config, many runs. Pure Python.

    extras:
      sweep:
        grid: {lr: [0.1, 0.01, 0.001], seed: [1, 2]}     # every combination (6 runs), or
        random:                                          # samples drawn from ranges, or
          samples: 20
          seed: 7                                        # (optional) the same draw every time
          parameters:
            lr: {min: 0.0001, max: 0.1, log: true}       # a float in [min, max], log-uniform
            layers: {min: 2, max: 8, integer: true}      # an integer in [min, max]
            optimizer: {choice: [adam, sgd]}             # one of these
        array: "0-9"                                     # Slurm's --array: 0-9, 1,3,5-7, 0-15:4
        maxConcurrent: 2                                 # (optional) runs at once

Exactly one of grid, random and array. Each run is the config with its values put into
`parameters` (`arrayIndex` for an array), so they reach its commands as `<% $parameters.lr %>`
does today, and with `extras.sweep` replaced by `extras.sweepRun: {sweep, index, values}`: a
plain v2 config that OpenPAI's clients read. Runs are named `<sweep>-<index>`.
"""

from __future__ import annotations

import itertools
import math
import random
import re
from dataclasses import dataclass
from typing import Any

from jobs.protocol.errors import JobConfigError

FIELD = "extras.sweep"
RUN_FIELD = "sweepRun"
MAX_RUNS = 10_000
KINDS = ("grid", "random", "array")
ARRAY_PARAMETER = "arrayIndex"
_ARRAY_ITEM = re.compile(r"(?P<first>\d+)(?:-(?P<last>\d+)(?::(?P<step>\d+))?)?")


@dataclass(frozen=True)
class Run:
    index: int
    values: dict[str, Any]


@dataclass(frozen=True)
class SweepPlan:
    kind: str
    runs: list[Run]
    max_concurrent: int | None


def sweep_block(doc: dict[str, Any]) -> Any:
    """The document's `extras.sweep`, None when it is no sweep."""
    extras = doc.get("extras")
    return extras.get("sweep") if isinstance(extras, dict) else None


def plan(block: Any) -> SweepPlan:
    """The runs of a sweep block; raises JobConfigError naming the field at fault."""
    if not isinstance(block, dict):
        raise JobConfigError([(FIELD, "must be a mapping with one of grid, random, array")])
    unknown = sorted(set(block) - {*KINDS, "maxConcurrent"})
    if unknown:
        raise JobConfigError([(f"{FIELD}.{unknown[0]}", f"unknown key (known: {', '.join(KINDS)}, maxConcurrent)")])
    kinds = [kind for kind in KINDS if kind in block]
    if len(kinds) != 1:
        raise JobConfigError([(FIELD, f"must have exactly one of {', '.join(KINDS)} (has {len(kinds)})")])
    kind = kinds[0]
    runs = {"grid": _grid, "random": _random, "array": _array}[kind](block[kind], f"{FIELD}.{kind}")
    if len(runs) > MAX_RUNS:
        raise JobConfigError([(f"{FIELD}.{kind}", f"makes {len(runs)} runs; at most {MAX_RUNS}")])
    cap = block.get("maxConcurrent")
    if cap is not None and (not isinstance(cap, int) or isinstance(cap, bool) or cap < 1):
        raise JobConfigError([(f"{FIELD}.maxConcurrent", "must be an integer >= 1")])
    return SweepPlan(kind=kind, runs=runs, max_concurrent=cap)


def _grid(grid: Any, field: str) -> list[Run]:
    if not isinstance(grid, dict) or not grid:
        raise JobConfigError([(field, "must be a mapping of parameter -> list of values")])
    for name, values in grid.items():
        if not isinstance(values, list) or not values:
            raise JobConfigError([(f"{field}.{name}", "must be a non-empty list of values")])
    names = list(grid)
    combinations = itertools.product(*(grid[name] for name in names))
    return [Run(index, dict(zip(names, values, strict=True))) for index, values in enumerate(combinations)]


def _random(spec: Any, field: str) -> list[Run]:
    if not isinstance(spec, dict):
        raise JobConfigError([(field, "must be a mapping with samples and parameters")])
    samples = spec.get("samples")
    if not isinstance(samples, int) or isinstance(samples, bool) or samples < 1:
        raise JobConfigError([(f"{field}.samples", "must be an integer >= 1")])
    ranges = spec.get("parameters")
    if not isinstance(ranges, dict) or not ranges:
        raise JobConfigError([(f"{field}.parameters", "must be a mapping of parameter -> range")])
    draw = random.Random(spec.get("seed"))
    samplers = {name: _sampler(value, f"{field}.parameters.{name}") for name, value in ranges.items()}
    return [Run(index, {name: sample(draw) for name, sample in samplers.items()}) for index in range(samples)]


def _sampler(spec: Any, field: str) -> Any:
    if isinstance(spec, dict) and "choice" in spec:
        choices = spec["choice"]
        if not isinstance(choices, list) or not choices:
            raise JobConfigError([(f"{field}.choice", "must be a non-empty list")])
        return lambda draw: draw.choice(choices)
    if not isinstance(spec, dict) or not all(_is_number(spec.get(key)) for key in ("min", "max")):
        raise JobConfigError([(field, "must be {min, max} (numbers; log, integer optional) or {choice: [...]}")])
    low, high = spec["min"], spec["max"]
    if low > high:
        raise JobConfigError([(f"{field}.max", f"must be >= min ({low})")])
    if spec.get("integer"):
        return lambda draw: draw.randint(math.ceil(low), math.floor(high))
    if spec.get("log"):
        if low <= 0:
            raise JobConfigError([(f"{field}.min", "must be > 0 for a log range")])
        return lambda draw: _round(math.exp(draw.uniform(math.log(low), math.log(high))))
    return lambda draw: _round(draw.uniform(low, high))


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _round(value: float) -> float:
    """Six significant digits: a value a name, a page and a command line show as it is."""
    return float(f"{value:.6g}")


def _array(text: Any, field: str) -> list[Run]:
    indices: list[int] = []
    for item in str(text).replace(" ", "").split(","):
        match = _ARRAY_ITEM.fullmatch(item)
        if not match:
            raise JobConfigError([(field, f'"{item}" is not an index, a range (0-9) or a stepped range (0-15:4)')])
        first = int(match["first"])
        last = int(match["last"]) if match["last"] is not None else first
        step = int(match["step"] or 1)
        if last < first or step < 1:
            raise JobConfigError([(field, f'"{item}": a range goes up, by a step >= 1')])
        if (last - first) // step + 1 > MAX_RUNS:
            raise JobConfigError([(field, f'"{item}" makes more than {MAX_RUNS} runs')])
        indices.extend(range(first, last + 1, step))
    unique = list(dict.fromkeys(indices))
    return [Run(position, {ARRAY_PARAMETER: index}) for position, index in enumerate(unique)]


def run_documents(doc: dict[str, Any], sweep_plan: SweepPlan) -> list[dict[str, Any]]:
    """Each run's own v2 document: the sweep's, named `<sweep>-<index>`, its values in
    `parameters`, `extras.sweepRun` in place of `extras.sweep`."""
    sweep = str(doc.get("name", ""))
    width = len(str(len(sweep_plan.runs) - 1))
    extras = {key: value for key, value in (doc.get("extras") or {}).items() if key != "sweep"}
    parameters = doc.get("parameters") or {}
    return [
        {
            **doc,
            "name": f"{sweep}-{run.index:0{width}d}",
            "parameters": {**parameters, **run.values},
            "extras": {**extras, RUN_FIELD: {"sweep": sweep, "index": run.index, "values": run.values}},
        }
        for run in sweep_plan.runs
    ]
