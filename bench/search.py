"""Adaptive search benchmark: TPE with ASHA pruning against a grid and random search, on a
synthetic training objective with a known optimum, driven through the search's own pure module
(jobs/protocol/search.py: the same ask and prune the portal's duty calls, the study rebuilt from
rows at every step) on a simulated clock: 8 slots, each run 20 "epochs" of one time unit, a
noisy curve per run.

    .venv/bin/python bench/search.py [--trials 64] [--cap 8] [--seed 1]

Goal (issue 47): TPE + ASHA within 2 % of the best value the grid finds, with at most 40 % of its
GPU-hours (here: epochs run; one epoch of one run is one GPU-unit). Random search is the baseline.
It does not start jobs: the portal's phases around it (the duty, the Stop path) have their tests in
tests/experiments/test_adaptive_search.py.
"""

from __future__ import annotations

import argparse
import math
import random
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from jobs.protocol.search import COMPLETE, PRUNED, RUNNING, TrialRow, ask, best, prune  # noqa: E402
from jobs.protocol.search_spec import SearchSpec, read_search  # noqa: E402

EPOCHS = 20
GRID_SIDE = 8
LR_LOW, LR_HIGH = 1e-4, 1e-1


def final_loss(lr: float, dropout: float) -> float:
    """The objective's end value: lowest (0.1) at lr = 0.01, dropout = 0.3."""
    return 0.1 + 0.2 * (math.log10(lr) + 2) ** 2 + (dropout - 0.3) ** 2


def curve(params: dict[str, float], noise: random.Random) -> list[float]:
    """A run's loss at epochs 1..EPOCHS: from about 1 + final down to final, with noise."""
    end = final_loss(params["lr"], params["dropout"])
    return [end + (1 + end) * math.exp(-epoch / 4) + noise.gauss(0, 0.005) for epoch in range(1, EPOCHS + 1)]


def spec(algorithm: str, trials: int, cap: int, seed: int, pruned: bool, asha: tuple[int, int] = (2, 3)) -> SearchSpec:
    if algorithm == "grid":
        lrs = [round(LR_LOW * (LR_HIGH / LR_LOW) ** (i / (GRID_SIDE - 1)), 6) for i in range(GRID_SIDE)]
        dropouts = [round(i / (GRID_SIDE - 1), 4) for i in range(GRID_SIDE)]
        parameters: dict[str, object] = {"lr": lrs, "dropout": dropouts}
    else:
        parameters = {"lr": {"min": LR_LOW, "max": LR_HIGH, "log": True}, "dropout": {"min": 0.0, "max": 1.0}}
    block = {
        "algorithm": algorithm,
        "metric": "loss",
        "trials": trials,
        "maxConcurrent": cap,
        "seed": seed,
        "parameters": parameters,
    }
    if pruned:
        block["pruner"] = {"kind": "asha", "minStep": asha[0], "reductionFactor": asha[1]}
    return read_search(block)


def run_search(search: SearchSpec, seed: int) -> dict[str, float]:
    """The search on a simulated clock: each tick every running trial reports its next epoch, the
    pruner judges them, and freed slots get new trials."""
    noise = random.Random(seed)
    cap = search.max_concurrent or search.trials
    rows: dict[int, TrialRow] = {}
    curves: dict[int, list[float]] = {}
    epochs_run = 0
    ticks = 0
    started = time.perf_counter()
    while True:
        running = [row for row in rows.values() if row.state == RUNNING]
        room = min(cap - len(running), search.trials - len(rows))
        if room > 0:
            for values in ask(search, rows.values(), room):
                number = len(rows)
                rows[number] = TrialRow(number, values, RUNNING, None, {})
                curves[number] = curve(values, noise)
        running = [row for row in rows.values() if row.state == RUNNING]
        if not running:
            break
        ticks += 1
        for row in running:  # one epoch each
            step = len(row.curve) + 1
            reported = {**row.curve, step: curves[row.number][step - 1]}
            epochs_run += 1
            done = step == EPOCHS
            rows[row.number] = TrialRow(
                row.number, row.params, COMPLETE if done else RUNNING, reported[step] if done else None, reported
            )
        for row in [row for row in rows.values() if row.state == RUNNING]:
            if prune(search, row, rows.values()) is not None:
                rows[row.number] = TrialRow(row.number, row.params, PRUNED, None, row.curve)
    top = best(search, rows.values())
    assert top is not None and top.value is not None
    return {
        "best": top.value,
        "true best": final_loss(top.params["lr"], top.params["dropout"]),
        "gpu units": epochs_run,
        "pruned": sum(row.state == PRUNED for row in rows.values()),
        "ticks": ticks,
        "seconds": time.perf_counter() - started,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--trials", type=int, default=64)
    parser.add_argument("--cap", type=int, default=8)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    plans = [("grid", False), ("random", False), ("tpe", True), ("random", True)]
    results = {}
    for algorithm, pruned in plans:
        name = algorithm + (" + asha" if pruned else "")
        results[name] = run_search(spec(algorithm, args.trials, args.cap, args.seed, pruned), args.seed)
    grid = results["grid"]
    print(f"{args.trials} trials, {args.cap} at once, {EPOCHS} epochs each; optimum loss 0.1 (lr 0.01, dropout 0.3)")
    print(
        f"{'search':<14} {'best loss':>10} {'vs grid':>8} {'GPU-units':>10} {'of grid':>8} "
        f"{'pruned':>7} {'ticks':>6} {'s':>6}"
    )
    for name, result in results.items():
        versus = (result["best"] - grid["best"]) / grid["best"] * 100
        share = result["gpu units"] / grid["gpu units"] * 100
        print(
            f"{name:<14} {result['best']:>10.4f} {versus:>+7.1f}% {result['gpu units']:>10.0f} {share:>7.0f}% "
            f"{result['pruned']:>7.0f} {result['ticks']:>6.0f} {result['seconds']:>6.1f}"
        )
    tpe = results["tpe + asha"]
    goal = tpe["best"] <= grid["best"] * 1.02 and tpe["gpu units"] <= 0.4 * grid["gpu units"]
    print(f"goal (TPE + ASHA within 2 % of grid's best at <= 40 % of its GPU-units): {'met' if goal else 'NOT met'}")


if __name__ == "__main__":
    main()
