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
        search: {algorithm: tpe, metric: loss, ...}      # adaptive (jobs/protocol/search_spec.py)
        maxConcurrent: 2                                 # (optional) runs at once

Exactly one of grid, random, array and search. A search's runs are drawn as it goes: its plan
holds the first ones (as many as run at once), jobs/sweep_search.py makes the rest.

Each run is the config with its values put into
`parameters` (`arrayIndex` for an array), so they reach its commands as `<% $parameters.lr %>`
does today, and with `extras.sweep` replaced by `extras.sweepRun: {sweep, index, values}`: a
plain v2 config that OpenPAI's clients read. Runs are named `<sweep>-<index>`.

A sweep's size is known before any run is built: its runs are counted from the block (a grid's
product, the samples, the sum of an array's items) and refused past MAX_RUNS, and runs times the
most one run can take (the config as JSON with the longest values put in, each reference
expanded) past MAX_SWEEP_BYTES. A few hundred bytes asking for 10^12 runs cost nothing to refuse.
"""

from __future__ import annotations

import itertools
import math
import random
import re
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from catalogue import Message
from jobs.protocol.errors import JobConfigError
from jobs.protocol.limits import json_size
from jobs.protocol.parsing import MAX_INTEGER
from jobs.protocol.search import ask
from jobs.protocol.search_spec import SearchSpec, read_search
from jobs.protocol.templating import REFERENCE, ROLE_SCOPED, to_text

FIELD = "extras.sweep"
RUN_FIELD = "sweepRun"
MAX_RUNS = 10_000
# Runs times the most one run can take: what one submit may write (configs, specs, tasks) and hold.
MAX_SWEEP_BYTES = 32 * 1024 * 1024
KINDS = ("grid", "random", "array", "search")
ARRAY_PARAMETER = "arrayIndex"
_ARRAY_ITEM = re.compile(r"(?P<first>\d+)(?:-(?P<last>\d+)(?::(?P<step>\d+))?)?")
NUMBER_TEXT = 24  # the longest a drawn number reads as text (`-1.23457e+308`), near enough


@dataclass(frozen=True)
class Run:
    index: int
    values: dict[str, Any]


@dataclass(frozen=True)
class SweepPlan:
    kind: str
    runs: list[Run]
    max_concurrent: int | None
    search: SearchSpec | None = None

    @property
    def total(self) -> int:
        """Runs in all (a search: its trials, most of them made later)."""
        return self.search.trials if self.search else len(self.runs)


@dataclass(frozen=True)
class _Shape:
    """A sweep before its runs are built: how many, the longest text each swept parameter can take,
    and how to build them."""

    count: int
    longest: dict[str, int]
    build: Callable[[], Iterator[dict[str, Any]]]


def sweep_block(doc: dict[str, Any]) -> Any:
    """The document's `extras.sweep`, None when it is no sweep."""
    extras = doc.get("extras")
    return extras.get("sweep") if isinstance(extras, dict) else None


def plan(doc: dict[str, Any]) -> SweepPlan:
    """The runs of a document's sweep; raises JobConfigError naming the field at fault, its size
    checked before a run is built."""
    block = sweep_block(doc)
    if not isinstance(block, dict):
        raise JobConfigError([(FIELD, Message.of("config.sweep.mapping"))])
    unknown = sorted(set(block) - {*KINDS, "maxConcurrent"})
    if unknown:
        raise JobConfigError(
            [(f"{FIELD}.{unknown[0]}", Message.of("config.sweep.unknown_key", known=", ".join(KINDS)))]
        )
    kinds = [kind for kind in KINDS if kind in block]
    if len(kinds) != 1:
        raise JobConfigError([(FIELD, Message.of("config.sweep.one_kind", kinds=", ".join(KINDS), count=len(kinds)))])
    kind = kinds[0]
    cap = block.get("maxConcurrent")
    if cap is not None and (not isinstance(cap, int) or isinstance(cap, bool) or cap < 1):
        raise JobConfigError([(f"{FIELD}.maxConcurrent", Message.of("config.sweep.positive"))])
    if kind == "search":
        return _search_plan(doc, read_search(block["search"]), cap)
    shape = {"grid": _grid, "random": _random, "array": _array}[kind](block[kind], f"{FIELD}.{kind}")
    _check_bytes(doc, shape)
    runs = [Run(index, values) for index, values in enumerate(shape.build())]
    return SweepPlan(kind=kind, runs=runs, max_concurrent=cap)


def _search_plan(doc: dict[str, Any], spec: SearchSpec, cap: int | None) -> SweepPlan:
    """A search's first runs: as many as run at once (its own maxConcurrent, else the sweep's),
    drawn from no results."""
    cap = spec.max_concurrent or cap
    longest = {
        name: _longest_text(r.choices) if r.choices is not None else NUMBER_TEXT for name, r in spec.space.items()
    }
    _check_bytes(doc, _Shape(spec.trials, longest, lambda: iter(())))
    first = ask(spec, [], min(cap or spec.trials, spec.trials))
    return SweepPlan(
        kind="search", runs=[Run(i, values) for i, values in enumerate(first)], max_concurrent=cap, search=spec
    )


def _too_many(field: str, count: int, at_least: bool = False) -> JobConfigError:
    text = "config.sweep.at_least_runs" if at_least else "config.sweep.runs"
    return JobConfigError([(field, Message.of(text, count=count, most=MAX_RUNS))])


def _check_bytes(doc: dict[str, Any], shape: _Shape) -> None:
    """Runs times the most one run can take, within MAX_SWEEP_BYTES."""
    per_run_cap = MAX_SWEEP_BYTES // shape.count
    rest = {**doc, "extras": {key: value for key, value in doc["extras"].items() if key != "sweep"}}
    # The run's values appear twice (parameters, extras.sweepRun), and each reference expands.
    values = 2 * sum(len(name) + longest + 8 for name, longest in shape.longest.items())
    per_run = json_size(rest) + values + _expansion(rest, shape.longest)
    if per_run > per_run_cap:
        total = per_run * shape.count
        most = MAX_SWEEP_BYTES // (1024 * 1024)
        message = Message.of(
            "config.sweep.bytes", count=shape.count, each=_size(per_run), total=_size(total), most=most
        )
        raise JobConfigError([(FIELD, message)])


def _size(size: int) -> Message:
    if size < 1024 * 1024:
        return Message.of("size.kb", size=f"{size / 1024:.1f}")
    return Message.of("size.mb", size=f"{size / (1024 * 1024):.1f}")


def _expansion(doc: dict[str, Any], swept: dict[str, int]) -> int:
    """The most that `<% %>` references can add to one run: each names a parameter (the longest of
    its swept values, or its one value) or a prerequisite's field (at most that prerequisite)."""
    parameters = doc.get("parameters")
    parameters = parameters if isinstance(parameters, dict) else {}
    prerequisites = doc.get("prerequisites")
    prerequisites = prerequisites if isinstance(prerequisites, list) else []
    longest_prerequisite: int | None = None
    added = 0
    for text in _strings(doc):
        if "<%" not in text:
            continue
        for match in REFERENCE.finditer(text):
            namespace, path = match.group(1), match.group(2)
            if namespace == "parameters":
                name = re.split(r"[.\[]", path.removeprefix("."), maxsplit=1)[0]
                added += swept[name] if name in swept else len(to_text(parameters.get(name, "")))
            elif namespace in ROLE_SCOPED:
                if longest_prerequisite is None:
                    longest_prerequisite = max((json_size(p) for p in prerequisites), default=0)
                added += longest_prerequisite
    return added


def _strings(value: Any) -> Iterator[str]:
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            yield item
        elif isinstance(item, dict):
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)


def _longest_text(values: Iterable[Any]) -> int:
    return max((len(to_text(value)) for value in values), default=0)


def _grid(grid: Any, field: str) -> _Shape:
    if not isinstance(grid, dict) or not grid:
        raise JobConfigError([(field, Message.of("config.sweep.grid"))])
    for name, values in grid.items():
        if not isinstance(values, list) or not values:
            raise JobConfigError([(f"{field}.{name}", Message.of("config.sweep.values"))])
    count = math.prod(len(values) for values in grid.values())
    if count > MAX_RUNS:
        raise _too_many(field, count)
    names = list(grid)

    def build() -> Iterator[dict[str, Any]]:
        for values in itertools.product(*(grid[name] for name in names)):
            yield dict(zip(names, values, strict=True))

    return _Shape(count, {name: _longest_text(grid[name]) for name in names}, build)


def _random(spec: Any, field: str) -> _Shape:
    if not isinstance(spec, dict):
        raise JobConfigError([(field, Message.of("config.sweep.random"))])
    samples = spec.get("samples")
    if not isinstance(samples, int) or isinstance(samples, bool) or samples < 1:
        raise JobConfigError([(f"{field}.samples", Message.of("config.sweep.positive"))])
    if samples > MAX_RUNS:
        raise _too_many(f"{field}.samples", samples)
    ranges = spec.get("parameters")
    if not isinstance(ranges, dict) or not ranges:
        raise JobConfigError([(f"{field}.parameters", Message.of("config.sweep.ranges"))])
    seed = spec.get("seed")
    if seed is not None and not isinstance(seed, int | str):
        raise JobConfigError([(f"{field}.seed", Message.of("config.sweep.seed"))])
    samplers = {name: _sampler(value, f"{field}.parameters.{name}") for name, value in ranges.items()}

    def build() -> Iterator[dict[str, Any]]:
        draw = random.Random(seed)
        for _ in range(samples):
            yield {name: sample(draw) for name, (sample, _longest) in samplers.items()}

    return _Shape(samples, {name: longest for name, (_sample, longest) in samplers.items()}, build)


def _sampler(spec: Any, field: str) -> tuple[Callable[[random.Random], Any], int]:
    """How to draw one value, and the longest text it can be."""
    if isinstance(spec, dict) and "choice" in spec:
        choices = spec["choice"]
        if not isinstance(choices, list) or not choices:
            raise JobConfigError([(f"{field}.choice", Message.of("config.sweep.choice"))])
        return (lambda draw: draw.choice(choices)), _longest_text(choices)
    if not isinstance(spec, dict) or not all(_is_number(spec.get(key)) for key in ("min", "max")):
        raise JobConfigError([(field, Message.of("config.sweep.range"))])
    low, high = spec["min"], spec["max"]
    if low > high:
        raise JobConfigError([(f"{field}.max", Message.of("config.sweep.max_below_min", min=low))])
    if spec.get("integer"):
        first, last = math.ceil(low), math.floor(high)
        if first > last:
            raise JobConfigError([(field, Message.of("config.sweep.no_integer", min=low, max=high))])
        return (lambda draw: draw.randint(first, last)), max(len(str(first)), len(str(last)))
    if spec.get("log"):
        if low <= 0:
            raise JobConfigError([(f"{field}.min", Message.of("config.sweep.log_min"))])
        return (lambda draw: _round(math.exp(draw.uniform(math.log(low), math.log(high))))), NUMBER_TEXT
    return (lambda draw: _round(draw.uniform(low, high))), NUMBER_TEXT


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _round(value: float) -> float:
    """Six significant digits: a value a name, a page and a command line show as it is."""
    return float(f"{value:.6g}")


def _array(text: Any, field: str) -> _Shape:
    items = str(text).replace(" ", "").split(",")
    if len(items) > MAX_RUNS:  # (each item is a run at least: no need to read them)
        raise _too_many(field, len(items), at_least=True)
    ranges = []
    for item in items:
        match = _ARRAY_ITEM.fullmatch(item)
        if not match:
            raise JobConfigError([(field, Message.of("config.sweep.array_item", item=item))])
        first = int(match["first"])
        last = int(match["last"]) if match["last"] is not None else first
        step = int(match["step"] or 1)
        if last < first or step < 1:
            raise JobConfigError([(field, Message.of("config.sweep.array_up", item=item))])
        if last > MAX_INTEGER:
            raise JobConfigError([(field, Message.of("config.sweep.array_index", item=item, most=MAX_INTEGER))])
        ranges.append(range(first, last + 1, step))
    count = sum((indices.stop - 1 - indices.start) // indices.step + 1 for indices in ranges)
    if count > MAX_RUNS:
        raise _too_many(field, count)

    def build() -> Iterator[dict[str, Any]]:
        for index in dict.fromkeys(itertools.chain.from_iterable(ranges)):
            yield {ARRAY_PARAMETER: index}

    return _Shape(count, {ARRAY_PARAMETER: max(len(str(indices.stop)) for indices in ranges)}, build)


def run_documents(doc: dict[str, Any], sweep_plan: SweepPlan) -> list[dict[str, Any]]:
    """Each run's own v2 document: the sweep's, named `<sweep>-<index>`, its values in
    `parameters`, `extras.sweepRun` in place of `extras.sweep`."""
    return [run_document(doc, run, sweep_plan.total) for run in sweep_plan.runs]


def run_name(doc: dict[str, Any], run: Run, total: int) -> str:
    """`<sweep>-<index>`, the index as wide as the sweep's last."""
    return f"{doc.get('name', '')}-{run.index:0{len(str(total - 1))}d}"


def run_document(doc: dict[str, Any], run: Run, total: int) -> dict[str, Any]:
    """One run's v2 document, of a sweep of `total` runs (the width of its number)."""
    sweep = str(doc.get("name", ""))
    extras = {key: value for key, value in (doc.get("extras") or {}).items() if key != "sweep"}
    parameters = doc.get("parameters") or {}
    return {
        **doc,
        "name": run_name(doc, run, total),
        "parameters": {**parameters, **run.values},
        "extras": {**extras, RUN_FIELD: {"sweep": sweep, "index": run.index, "values": run.values}},
    }
