"""Adaptive search benchmark, through the portal's real phases: TPE with ASHA pruning against a grid
and random search, side by side in one run, on a synthetic training objective with a known optimum.

    .venv/bin/python bench/search.py [--trials 64] [--cap 8] [--epochs 20] [--epoch-s 2]
                                     [--sample-s 1] [--seed 1] [--min-step 2] [--reduction 4]

Each search is a sweep submitted as a user submits one (`jobs.submit.submit`, `extras.sweep.search`)
and run by the real parts, all four at once on one SQLite database: the scheduler's passes
(`Scheduler.run_once`, back to back while they do work, its idle wait between them, as
`runscheduler`) start each trial as a sandboxed process task on fake GPU nodes (process-executor
nodes declaring 8 GPUs each: a task gets its GPU indices, no device); the sampler's passes, in a
process of their own as `runsampler`'s (`Sampler.run` every --sample-s seconds, as every
PAI_SAMPLE_SECONDS; before issue 47's second round they ran between the scheduler's passes, which
waited for them), read the `PAI_METRIC` lines the tasks print, prune the runs behind (the Stop
path: SIGTERM, STOPPED, the reason) and make the next trials as runs end.

A trial is a Python script (`objective_script`): loss 0.1 at its optimum (lr 0.01, dropout 0.3),
a noisy curve from about 1 + final down to final, one `PAI_METRIC {"step": e, "loss": ...}` line per
epoch after a sleep of --epoch-s; its noise seeded by its values and --seed, so the same values
give the same curve in every search. GPU-hours: each run's task from start to end (the portal's
own times) x its GPUs (1), summed; printed as GPU-seconds at this scale. The best value is the
search's own (its best run's last loss, as the sweep page says); "true" is the objective's end
value at those values, without noise.

Goal (issue 47): TPE + ASHA within 2 % of the best value the grid finds, with at most 40 % of its
GPU-hours. Random search is the baseline. About 6 minutes on a 2-CPU box (the grid's 8 waves of
20 epochs of 2 s); `--epoch-s 1` halves it, but a run's start and a pruned run's stop then weigh
twice as much against its epochs (docs/performance.md).
"""

from __future__ import annotations

import argparse
import inspect
import json
import math
import multiprocessing
import random
import statistics
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.scheduler_scale import spec  # noqa: E402  (one job spec for the benches)
from bench.throughput import own_loopback_address, setup_django  # noqa: E402

GRID_SIDE = 8
LR_LOW, LR_HIGH = 1e-4, 1e-1
GPUS_PER_NODE = 8
IDLE_WAIT_S = 0.05
SEARCHES = {  # name: (algorithm, pruned)
    "grid": ("grid", False),
    "random": ("random", False),
    "tpe + asha": ("tpe", True),
    "random + asha": ("random", True),
}


def final_loss(lr: float, dropout: float) -> float:
    """The objective's end value: lowest (0.1) at lr = 0.01, dropout = 0.3."""
    return 0.1 + 0.2 * (math.log10(lr) + 2) ** 2 + (dropout - 0.3) ** 2


def loss_at(epoch: int, end: float, noise: random.Random) -> float:
    """A run's loss at an epoch: from about 1 + end down to end, with noise."""
    return end + (1 + end) * math.exp(-epoch / 4) + noise.gauss(0, 0.005)


def objective_script(epochs: int, epoch_s: float, seed: int) -> str:
    """The trial's command: the two functions above, run in the task, reporting each epoch."""
    return (
        "python3 - <<'PY'\nimport json, math, random, time\n"
        + inspect.getsource(final_loss)
        + inspect.getsource(loss_at)
        + "lr, dropout = <% $parameters.lr %>, <% $parameters.dropout %>\n"
        + f"noise = random.Random(f'{{lr}}/{{dropout}}/{seed}')\n"
        + f"for epoch in range(1, {epochs + 1}):\n"
        + f"    time.sleep({epoch_s})\n"
        + "    point = {'step': epoch, 'loss': loss_at(epoch, final_loss(lr, dropout), noise)}\n"
        + "    print('PAI_METRIC', json.dumps(point), flush=True)\nPY\n"
    )


def search_block(algorithm: str, pruned: bool, args: argparse.Namespace) -> dict[str, Any]:
    if algorithm == "grid":
        lrs = [round(LR_LOW * (LR_HIGH / LR_LOW) ** (i / (GRID_SIDE - 1)), 6) for i in range(GRID_SIDE)]
        dropouts = [round(i / (GRID_SIDE - 1), 4) for i in range(GRID_SIDE)]
        parameters: dict[str, Any] = {"lr": lrs, "dropout": dropouts}
    else:
        parameters = {"lr": {"min": LR_LOW, "max": LR_HIGH, "log": True}, "dropout": {"min": 0.0, "max": 1.0}}
    block = {
        "algorithm": algorithm,
        "metric": "loss",
        "goal": "minimize",
        "trials": args.trials,
        "maxConcurrent": args.cap,
        "seed": args.seed,
        "parameters": parameters,
    }
    if pruned:
        block["pruner"] = {"kind": "asha", "minStep": args.min_step, "reductionFactor": args.reduction}
    return block


def sweep_config(name: str, block: dict[str, Any], args: argparse.Namespace) -> str:
    document = spec(name, 1, 1, "default", objective_script(args.epochs, args.epoch_s, args.seed))
    document["parameters"] = {"lr": 0.01, "dropout": 0.3}
    document["extras"] = {"sweep": {"search": block}}
    return json.dumps(document)  # (JSON is YAML)


def make_cluster(nodes: int) -> Any:
    from django.contrib.auth import get_user_model

    from clusters.models import Gpu, GpuType, Node

    gpu_type = GpuType.objects.create(name="fake")
    for n in range(nodes):
        node = Node.objects.create(
            name=f"fake-{n}", executor="process", cpus=GPUS_PER_NODE, memory_mb=GPUS_PER_NODE * 1024,
            address=own_loopback_address(),
        )  # fmt: skip
        Gpu.objects.bulk_create(Gpu(node=node, index=g, gpu_type=gpu_type) for g in range(GPUS_PER_NODE))
    return get_user_model().objects.create_user("bench", password="bench-password-1")


def drive(sweeps: dict[str, Any], sample_s: float, deadline_s: float, passes: dict[str, list[float]]) -> dict[str, Any]:
    """The scheduler's passes here and the sampler's in a process of its own (as `runscheduler` and
    `runsampler` run), until every search is done and its runs ended; returns when each search
    ended (monotonic seconds); `passes` gets each pass's seconds."""
    from django.db import connections

    from jobs.models import Job
    from jobs.states import FINISHED_JOB_STATES
    from scheduling.scheduler import Scheduler

    connections.close_all()  # (before the fork: the sampler's process opens its own)
    context = multiprocessing.get_context("fork")
    stop, sampled = context.Event(), context.Queue()
    sampler = context.Process(target=run_sampler, args=(stop, sampled), name="sampler", daemon=True)
    sampler.start()
    scheduler = Scheduler()
    ended: dict[str, float] = {}
    next_look = deadline = time.monotonic()
    deadline += deadline_s
    try:
        while len(ended) < len(sweeps):
            if time.monotonic() > deadline:
                raise SystemExit(f"the searches did not end in {deadline_s:.0f} s; ended: {sorted(ended)}")
            began = time.monotonic()
            worked = scheduler.run_once()
            passes["scheduler"].append((now := time.monotonic()) - began)
            if now >= next_look:  # (as often as the sampler passes)
                next_look = now + sample_s
                for name, sweep in sweeps.items():
                    sweep.refresh_from_db()
                    running = Job.objects.filter(sweep=sweep).exclude(state__in=FINISHED_JOB_STATES).exists()
                    if name not in ended and sweep.search_done and not running:
                        ended[name] = now
            if not worked:
                scheduler.idle_wait(IDLE_WAIT_S)
    finally:
        scheduler.release_lease()
        stop.set()
        passes["sampler"] = sampled.get(timeout=120)
        sampler.join(30)
    return ended


def run_sampler(stop: Any, sampled: Any) -> None:
    """The sampler's loop (`Sampler.run`, every PAI_SAMPLE_SECONDS, as `runsampler`), in the forked
    process; each pass's seconds sent back once stopped."""
    from scheduling.sampler import Sampler

    sampler = Sampler(gpu_reader=dict)  # (fake GPUs: no nvidia-smi)
    times: list[float] = []
    run_due = sampler.run_due

    def timed(now: float) -> None:
        run_due(now)
        times.append(time.monotonic() - now)

    sampler.run_due = timed  # type: ignore[method-assign]
    try:
        sampler.run(stop)
    finally:
        sampled.put(times)


def gpu_seconds(sweep: Any) -> float:
    from jobs.models import Task

    runs = Task.objects.filter(job__sweep=sweep).values_list("started_at", "finished_at", "gpus")
    return sum((end - start).total_seconds() * len(gpus) for start, end, gpus in runs if start and end)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--trials", type=int, default=64)
    parser.add_argument("--cap", type=int, default=8)
    parser.add_argument("--epochs", type=int, default=20)
    parser.add_argument("--epoch-s", type=float, default=2.0, help="each epoch's sleep")
    parser.add_argument("--sample-s", type=float, default=1.0, help="the sampler's period (PAI_SAMPLE_SECONDS)")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--min-step", type=int, default=2, help="ASHA's minStep")
    parser.add_argument("--reduction", type=int, default=4, help="ASHA's reductionFactor")
    args = parser.parse_args()
    setup_django(PAI_SAMPLE_SECONDS=str(args.sample_s))
    from jobs.models import Sweep
    from jobs.submit import submit
    from jobs.sweep_search import search_state

    user = make_cluster(math.ceil(len(SEARCHES) * args.cap / GPUS_PER_NODE))
    started = time.monotonic()
    sweeps: dict[str, Any] = {}
    for name, plan in SEARCHES.items():  # (as the submit form and the API submit)
        sweeps[name] = submit(user, sweep_config(name.replace(" + ", "-"), search_block(*plan, args), args))
        assert isinstance(sweeps[name], Sweep)
    passes: dict[str, list[float]] = {"scheduler": [], "sampler": []}
    deadline_s = 60 + 4 * args.trials * args.epochs * args.epoch_s / args.cap
    ended = drive(sweeps, args.sample_s, deadline_s, passes)
    results = {}
    for name, sweep in sweeps.items():
        state = search_state(sweep)
        assert state.best_value is not None, f"{name}: no run completed"
        results[name] = {
            "best": state.best_value,
            "true": final_loss(state.best_values["lr"], state.best_values["dropout"]),
            "gpu_s": gpu_seconds(sweep),
            "pruned": state.pruned,
            "failed": state.failed,
            "wall": ended[name] - started,
        }
    report(args, results, passes)


def report(args: argparse.Namespace, results: dict[str, dict[str, float]], passes: dict[str, list[float]]) -> None:
    grid = results["grid"]
    print(
        f"\n{args.trials} trials, {args.cap} at once, {args.epochs} epochs of {args.epoch_s:g} s; sampler every "
        f"{args.sample_s:g} s; ASHA minStep {args.min_step}, reductionFactor {args.reduction}; seed {args.seed}; "
        "optimum loss 0.1 (lr 0.01, dropout 0.3)\n"
    )
    print("| search | best loss | true loss | vs grid's best | GPU-s | of grid's | pruned | failed | wall time |")
    print("|---|---|---|---|---|---|---|---|---|")
    for name, result in results.items():
        versus = (result["best"] - grid["best"]) / grid["best"] * 100
        share = result["gpu_s"] / grid["gpu_s"] * 100
        print(
            f"| {name} | {result['best']:.4f} | {result['true']:.4f} | {versus:+.1f} % | {result['gpu_s']:,.0f} "
            f"| {share:.0f} % | {result['pruned']:.0f} | {result['failed']:.0f} | {result['wall']:.0f} s |"
        )
    print()
    for name, times in passes.items():
        p50, p95 = statistics.median(times), statistics.quantiles(times, n=20)[-1]
        print(f"{name} passes: {len(times)}, p50 {p50 * 1000:.0f} ms, p95 {p95 * 1000:.0f} ms, max {max(times):.1f} s")
    tpe = results["tpe + asha"]
    goal = tpe["best"] <= grid["best"] * 1.02 and tpe["gpu_s"] <= 0.4 * grid["gpu_s"]
    print(f"\ngoal (TPE + ASHA within 2 % of grid's best at <= 40 % of its GPU-hours): {'met' if goal else 'NOT met'}")


if __name__ == "__main__":
    main()
