"""Adaptive search, pure: the trials so far in, the next trials' values (Optuna's samplers) and
whether a running trial is pruned out. No database and no memory between calls: each call
rebuilds an in-memory Optuna study from the rows it is given (jobs/sweep_search.py reads them
from the sweep's runs and their metrics), so a restarted scheduler asks the same as before.

A failed run is a FAIL trial (no value: it says nothing about its values' worth), a pruned one
a PRUNED trial with its curve so far (what TPE reads of it), a finished one a COMPLETE trial with
its metric's last value, or a FAIL one when it reported none.
"""

from __future__ import annotations

import functools
import hashlib
import itertools
import statistics
import warnings
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from types import ModuleType
from typing import TYPE_CHECKING, Any

from jobs.protocol.search_spec import Range, SearchSpec

if TYPE_CHECKING:
    from optuna.distributions import BaseDistribution
    from optuna.samplers import BaseSampler
    from optuna.trial import FrozenTrial

RUNNING, COMPLETE, PRUNED, FAILED = "running", "complete", "pruned", "failed"


@functools.cache
def _optuna() -> ModuleType:
    """Optuna, imported on the first search that asks (with NumPy, about a third of a Django
    start's imports: every `manage.py` command and process paid it, most never searching)."""
    import optuna

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    return optuna


@dataclass(frozen=True)
class TrialRow:
    """One run of the search as stored: its values, how it stands, its metric's last value, its
    curve (step -> value) and when each of its steps was read (step -> a time that only goes
    forward, the sampler's read: which runs reached an ASHA rung before it; none: the earliest)."""

    number: int
    params: dict[str, Any]
    state: str
    value: float | None = None
    curve: dict[int, float] = field(default_factory=dict)
    read_at: Mapping[int, float] = field(default_factory=dict)


@dataclass(frozen=True)
class Pruning:
    """Why a running trial stops: at `step` its value was behind the others' at that step."""

    step: int
    value: float
    median: float | None = None  # (median pruner)
    cutoff: float | None = None  # (asha: the last value kept)
    kept: int = 0
    runs: int = 0


def distributions(spec: SearchSpec) -> dict[str, BaseDistribution]:
    return {name: _distribution(r) for name, r in spec.space.items()}


def _distribution(r: Range) -> BaseDistribution:
    kinds = _optuna().distributions
    if r.choices is not None:
        return kinds.CategoricalDistribution(r.choices)
    if r.integer:
        return kinds.IntDistribution(int(r.low), int(r.high), log=r.log)
    return kinds.FloatDistribution(r.low, r.high, log=r.log)


def ask(spec: SearchSpec, rows: Iterable[TrialRow], count: int) -> list[dict[str, Any]]:
    """The values of the next `count` trials, drawn from the trials so far (running ones
    included: asked together, they are not asked twice)."""
    rows = sorted(rows, key=lambda row: row.number)
    space = distributions(spec)
    study = _optuna().create_study(sampler=_sampler(spec, len(rows)), direction=spec.goal)
    for row in rows:
        study.add_trial(_frozen(row, space))
    asked = []
    for _ in range(count):
        trial = study.ask(space)
        asked.append({name: _plain(trial.params[name], spec.space[name]) for name in spec.space})
    return asked


def _sampler(spec: SearchSpec, done: int) -> BaseSampler:
    optuna = _optuna()
    # Seeded by the seed and how many trials there are: a rebuilt study draws anew each time,
    # the same draw for the same rows. (A grid's order is the seed's alone: trial n is its nth point.)
    seed = _seed(spec.seed, done)
    if spec.algorithm == "grid":
        grid = {name: list(r.choices or ()) for name, r in spec.space.items()}
        return optuna.samplers.GridSampler(grid, seed=_seed(spec.seed, 0))
    if spec.algorithm == "random":
        return optuna.samplers.RandomSampler(seed=seed)
    with warnings.catch_warnings():  # (constant_liar: "experimental" since 2.8, kept in 4.x)
        warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
        return optuna.samplers.TPESampler(seed=seed, constant_liar=True)


def _seed(seed: int | str | None, done: int) -> int:
    digest = hashlib.sha256(f"{seed!r}/{done}".encode()).digest()
    return int.from_bytes(digest[:4], "big")


def _frozen(row: TrialRow, space: dict[str, BaseDistribution]) -> FrozenTrial:
    trial = _optuna().trial
    TrialState = trial.TrialState  # (Optuna's enum, by its name)
    params = {name: value for name, value in row.params.items() if name in space and _fits(space[name], value)}
    state = {
        RUNNING: TrialState.RUNNING,
        COMPLETE: TrialState.COMPLETE,
        PRUNED: TrialState.PRUNED,
        FAILED: TrialState.FAIL,
    }[row.state]
    if state == TrialState.COMPLETE and row.value is None:
        state = TrialState.FAIL
    return trial.create_trial(
        state=state,
        value=row.value if state == TrialState.COMPLETE else None,
        params=params,
        distributions={name: space[name] for name in params},
        intermediate_values=dict(row.curve) if state != TrialState.FAIL else None,
    )


def _fits(distribution: BaseDistribution, value: Any) -> bool:
    """A stored value the space still holds (a run's values as written, rounded)."""
    try:
        return distribution._contains(distribution.to_internal_repr(value))
    except (ValueError, TypeError):
        return False


def _plain(value: Any, r: Range) -> Any:
    """Six significant digits for a float: a value a name, a page and a command line show as it
    is (as a random sweep's), kept inside its range."""
    if r.choices is not None or r.integer:
        return value
    return min(max(float(f"{value:.6g}"), r.low), r.high)


def value_at(curve: dict[int, float], step: int) -> float | None:
    """A curve's value at `step`: the last reported at or before it."""
    steps = [s for s in curve if s <= step]
    return curve[max(steps)] if steps else None


def prune(spec: SearchSpec, trial: TrialRow, others: Iterable[TrialRow]) -> Pruning | None:
    """Whether a running trial is stopped now, by the spec's pruner, and why; None: it goes on."""
    if spec.pruner is None or not trial.curve:
        return None
    others = [row for row in others if row.number != trial.number and row.curve]
    if spec.pruner.kind == "median":
        return _median(spec, trial, others)
    return _asha(spec, trial, others)


def _better(spec: SearchSpec, a: float, b: float) -> bool:
    return a < b if spec.minimize else a > b


def _median(spec: SearchSpec, trial: TrialRow, others: list[TrialRow]) -> Pruning | None:
    """Optuna's MedianPruner: past the warm-up, once `minTrials` runs have completed, a run whose
    best value so far is worse than the median of the completed runs' at its last step."""
    settings = spec.pruner.settings if spec.pruner else {}
    step = max(trial.curve)
    if step < settings["warmupSteps"]:
        return None
    completed = [row for row in others if row.state == COMPLETE and max(row.curve) >= step]
    if not completed or len(completed) < settings["minTrials"]:
        return None
    at_step = [value for row in completed if (value := value_at(row.curve, step)) is not None]
    if not at_step:
        return None
    median = statistics.median(at_step)
    best = min(trial.curve.values()) if spec.minimize else max(trial.curve.values())
    return Pruning(step, trial.curve[step], median=median) if _better(spec, median, best) else None


def rungs(spec: SearchSpec) -> Iterable[int]:
    settings = spec.pruner.settings if spec.pruner else {}
    return (settings["minStep"] * settings["reductionFactor"] ** k for k in itertools.count())


def reached(row: TrialRow, rung: int) -> float | None:
    """When the run reached the rung: its first step read at or past it (None: not yet)."""
    return min((row.read_at.get(step, 0.0) for step in row.curve if step >= rung), default=None)


def _asha(spec: SearchSpec, trial: TrialRow, others: list[TrialRow]) -> Pruning | None:
    """Asynchronous successive halving (Optuna's SuccessiveHalvingPruner): rungs at steps
    minStep * reductionFactor^k, and a run judged once at each rung, as it reaches it: against
    the runs that had reached that rung by then (in the same read, or before), it goes on only
    within the best 1/reductionFactor of them (the best one, while fewer). Those that reach the
    rung after it never judge it again there: its verdict at a rung is the same on every pass
    (and after a restart), so a run kept at a rung is pruned, if at all, at a later one, as it
    reaches it. Every run that reached the rung counts, whatever became of it since (Optuna's
    too): what it reported there was measured all the same."""
    settings = spec.pruner.settings if spec.pruner else {}
    last = max(trial.curve)
    for rung in itertools.takewhile(lambda step: step <= last, rungs(spec)):
        mine, when = value_at(trial.curve, rung), reached(trial, rung)
        if mine is None or when is None:
            continue
        values = [mine] + [
            value
            for row in others
            if (then := reached(row, rung)) is not None and then <= when
            if (value := value_at(row.curve, rung)) is not None
        ]
        if len(values) < settings["minTrials"]:
            continue
        kept = max(1, len(values) // settings["reductionFactor"])
        cutoff = sorted(values, reverse=not spec.minimize)[kept - 1]
        if _better(spec, cutoff, mine):
            return Pruning(rung, mine, cutoff=cutoff, kept=kept, runs=len(values))
    return None


def best(spec: SearchSpec, rows: Iterable[TrialRow]) -> TrialRow | None:
    """The completed trial with the best value."""
    done = [row for row in rows if row.state == COMPLETE and row.value is not None]
    if not done:
        return None
    sign = 1.0 if spec.minimize else -1.0
    return min(done, key=lambda row: sign * (row.value or 0.0))
