"""An adaptive search's block (`extras.sweep.search`), read and checked. Pure Python.

    extras:
      sweep:
        search:
          algorithm: tpe            # tpe | random | grid (Optuna's samplers: jobs/protocol/search.py)
          metric: loss              # what the runs report (PAI_METRIC lines, $PAI_METRICS_FILE)
          goal: minimize            # or maximize
          trials: 64                # runs in all
          maxConcurrent: 8          # (optional) runs at once
          seed: 7                   # (optional) the same trials for the same results
          parameters:               # as `random`'s ranges; a grid's: lists (or {choice: [...]})
            lr: {min: 0.0001, max: 0.1, log: true}
            layers: {min: 2, max: 8, integer: true}
            optimizer: {choice: [adam, sgd]}
          pruner: {kind: asha, minStep: 1, reductionFactor: 4, minTrials: 1}
          # or    {kind: median, warmupSteps: 0, minTrials: 5}

Trials are made as the search goes (jobs/sweep_search.py), not at submit: a run's values are
drawn from the results of those before it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from catalogue import Message
from jobs.protocol.errors import JobConfigError

FIELD = "extras.sweep.search"
ALGORITHMS = ("tpe", "random", "grid")
GOALS = ("minimize", "maximize")
PRUNERS = ("asha", "median")
KEYS = ("algorithm", "metric", "goal", "trials", "maxConcurrent", "seed", "parameters", "pruner")
# Each pruner's settings and their defaults (Optuna's: SuccessiveHalvingPruner, MedianPruner).
PRUNER_SETTINGS: dict[str, dict[str, int]] = {
    "asha": {"minStep": 1, "reductionFactor": 4, "minTrials": 1},
    "median": {"warmupSteps": 0, "minTrials": 5},
}
Scalar = str | int | float | bool | None


@dataclass(frozen=True)
class Range:
    """A parameter's values: `choices`, or a number in [low, high] (integer, log-uniform)."""

    low: float = 0.0
    high: float = 0.0
    log: bool = False
    integer: bool = False
    choices: tuple[Scalar, ...] | None = None


@dataclass(frozen=True)
class Pruner:
    kind: str
    settings: dict[str, int] = field(default_factory=dict)


@dataclass(frozen=True)
class SearchSpec:
    algorithm: str
    metric: str
    goal: str
    trials: int
    max_concurrent: int | None
    seed: int | str | None
    space: dict[str, Range]
    pruner: Pruner | None

    @property
    def minimize(self) -> bool:
        return self.goal == "minimize"

    def grid_points(self) -> int:
        return math.prod(len(r.choices or ()) for r in self.space.values())


def read_search(block: Any, field_name: str = FIELD) -> SearchSpec:
    """The search block checked; raises JobConfigError naming the field at fault."""
    if not isinstance(block, dict):
        raise JobConfigError([(field_name, Message.of("config.search.mapping"))])
    unknown = sorted(set(block) - set(KEYS))
    if unknown:
        raise JobConfigError(
            [(f"{field_name}.{unknown[0]}", Message.of("config.search.unknown_key", known=", ".join(KEYS)))]
        )
    algorithm = block.get("algorithm", "tpe")
    if algorithm not in ALGORITHMS:
        raise JobConfigError([(f"{field_name}.algorithm", Message.of("config.one_of", options=", ".join(ALGORITHMS)))])
    metric = block.get("metric")
    if not isinstance(metric, str) or not metric.strip() or len(metric) > 64:
        raise JobConfigError([(f"{field_name}.metric", Message.of("config.search.metric"))])
    goal = block.get("goal", "minimize")
    if goal not in GOALS:
        raise JobConfigError([(f"{field_name}.goal", Message.of("config.one_of", options=", ".join(GOALS)))])
    trials = _positive(block.get("trials"), f"{field_name}.trials")
    cap = block.get("maxConcurrent")
    if cap is not None:
        _positive(cap, f"{field_name}.maxConcurrent")
    seed = block.get("seed")
    if seed is not None and (isinstance(seed, bool) or not isinstance(seed, int | str)):
        raise JobConfigError([(f"{field_name}.seed", Message.of("config.sweep.seed"))])
    space = _space(block.get("parameters"), f"{field_name}.parameters", grid=algorithm == "grid")
    spec = SearchSpec(algorithm, metric, goal, trials, cap, seed, space, _pruner(block.get("pruner"), field_name))
    if algorithm == "grid" and trials > spec.grid_points():
        raise JobConfigError(
            [(f"{field_name}.trials", Message.of("config.search.grid_trials", points=spec.grid_points()))]
        )
    return spec


def _positive(value: Any, field_name: str) -> int:
    if not isinstance(value, int) or isinstance(value, bool):
        raise JobConfigError([(field_name, Message.of("config.sweep.positive"))])
    if value < 1:
        raise JobConfigError([(field_name, Message.of("config.min", value=1))])
    return value


def _space(ranges: Any, field_name: str, grid: bool) -> dict[str, Range]:
    if not isinstance(ranges, dict) or not ranges:
        raise JobConfigError([(field_name, Message.of("config.sweep.ranges"))])
    return {str(name): _range(spec, f"{field_name}.{name}", grid) for name, spec in ranges.items()}


def _range(spec: Any, field_name: str, grid: bool) -> Range:
    if isinstance(spec, list) or (isinstance(spec, dict) and "choice" in spec):
        choices = spec if isinstance(spec, list) else spec["choice"]
        where = field_name if isinstance(spec, list) else f"{field_name}.choice"
        if not isinstance(choices, list) or not choices:
            raise JobConfigError([(where, Message.of("config.sweep.choice"))])
        if not all(choice is None or isinstance(choice, str | int | float | bool) for choice in choices):
            raise JobConfigError([(where, Message.of("config.search.choice_scalar"))])
        return Range(choices=tuple(dict.fromkeys(choices)))
    if grid:
        raise JobConfigError([(field_name, Message.of("config.search.grid_values"))])
    if not isinstance(spec, dict) or not all(_is_number(spec.get(key)) for key in ("min", "max")):
        raise JobConfigError([(field_name, Message.of("config.sweep.range"))])
    low, high = spec["min"], spec["max"]
    if low > high:
        raise JobConfigError([(f"{field_name}.max", Message.of("config.sweep.max_below_min", min=low))])
    integer, log = bool(spec.get("integer")), bool(spec.get("log"))
    if integer:
        low, high = math.ceil(low), math.floor(high)
        if low > high:
            raise JobConfigError(
                [(field_name, Message.of("config.sweep.no_integer", min=spec["min"], max=spec["max"]))]
            )
    if log and low <= 0:
        raise JobConfigError([(f"{field_name}.min", Message.of("config.sweep.log_min"))])
    return Range(low=low, high=high, log=log, integer=integer)


def _pruner(block: Any, field_name: str) -> Pruner | None:
    if block is None:
        return None
    where = f"{field_name}.pruner"
    if not isinstance(block, dict) or block.get("kind") not in PRUNERS:
        raise JobConfigError(
            [(f"{where}.kind" if isinstance(block, dict) else where, Message.of("config.search.pruner"))]
        )
    kind = block["kind"]
    defaults = PRUNER_SETTINGS[kind]
    unknown = sorted(set(block) - {"kind", *defaults})
    if unknown:
        known = ", ".join(["kind", *defaults])
        raise JobConfigError([(f"{where}.{unknown[0]}", Message.of("config.search.unknown_key", known=known))])
    settings = {}
    for name, default in defaults.items():
        value = block.get(name, default)
        if not isinstance(value, int) or isinstance(value, bool):
            raise JobConfigError([(f"{where}.{name}", Message.of("config.sweep.positive"))])
        least = 2 if name == "reductionFactor" else 0 if name in ("warmupSteps", "minTrials") else 1
        if value < least:
            raise JobConfigError([(f"{where}.{name}", Message.of("config.min", value=least))])
        settings[name] = value
    return Pruner(kind, settings)


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def as_block(spec: SearchSpec) -> dict[str, Any]:
    """The spec as a block read_search reads back the same (what a Sweep stores)."""
    parameters: dict[str, Any] = {}
    for name, r in spec.space.items():
        if r.choices is not None:
            parameters[name] = {"choice": list(r.choices)}
        else:
            parameters[name] = {"min": r.low, "max": r.high, "log": r.log, "integer": r.integer}
    block: dict[str, Any] = {
        "algorithm": spec.algorithm,
        "metric": spec.metric,
        "goal": spec.goal,
        "trials": spec.trials,
        "parameters": parameters,
    }
    if spec.max_concurrent is not None:
        block["maxConcurrent"] = spec.max_concurrent
    if spec.seed is not None:
        block["seed"] = spec.seed
    if spec.pruner is not None:
        block["pruner"] = {"kind": spec.pruner.kind, **spec.pruner.settings}
    return block
