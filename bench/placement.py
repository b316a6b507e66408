"""Placement benchmark: one scheduling pass over 10,000 pending tasks on 1,000 simulated nodes.

    .venv/bin/python bench/placement.py [--runs 5] [--tasks 10000] [--nodes 1000]

Nodes have 8 GPUs, 64 CPUs, 512 GB and a 20000-40000 port range. Jobs are a fixed-seed mix of
1/2/4/8-GPU tasks, 1, 2 or 4 tasks per job (gang), each task asking for an http and an ssh port.
Goal (issue 5): a pass under 100 ms. Prints one row per scenario: the median and best pass time
(wall clock; the best is the least disturbed by other processes), the median CPU time of the
pass (what it costs on a quiet machine) and placements (tasks placed) per second at the median.
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from clusters.placement import JobRequest, NodeState, PortRequest, Resources, TaskRequest, VcState, place

GPUS_PER_NODE = 8
CPUS_PER_NODE = 64
MEMORY_PER_NODE_MB = 512 * 1024
PORTS = [PortRequest("http", 1), PortRequest("ssh", 1)]


def make_nodes(count: int, busy_fraction: float = 0.0, seed: int = 7) -> list[NodeState]:
    rng = random.Random(seed)
    nodes = []
    for number in range(count):
        busy = rng.randint(0, GPUS_PER_NODE) if rng.random() < busy_fraction else 0
        nodes.append(
            NodeState(
                name=f"node-{number:04d}",
                cpu_free=CPUS_PER_NODE - busy * 4,
                memory_free_mb=MEMORY_PER_NODE_MB - busy * 32 * 1024,
                gpus_free={index: "V100" for index in range(busy, GPUS_PER_NODE)},
                ports_used={20000 + port for port in range(busy * 2)},
                port_range=(20000, 40000),
                gpu_total=GPUS_PER_NODE,
                cpu_total=CPUS_PER_NODE,
                memory_total_mb=MEMORY_PER_NODE_MB,
            )
        )
    return nodes


def make_jobs(task_count: int, vcs: list[str], seed: int = 11) -> list[JobRequest]:
    rng = random.Random(seed)
    jobs: list[JobRequest] = []
    tasks_made = 0
    while tasks_made < task_count:
        gpu = rng.choice((1, 1, 2, 4, 8))
        instances = min(rng.choice((1, 1, 2, 4)), task_count - tasks_made)
        key = len(jobs) + 1
        tasks = [
            TaskRequest("worker", index, cpu=2 * gpu, memory_mb=16 * 1024 * gpu, gpu=gpu, ports=PORTS)
            for index in range(instances)
        ]
        jobs.append(JobRequest(key=key, vc=vcs[key % len(vcs)], tasks=tasks, order=float(key)))
        tasks_made += instances
    return jobs


def make_vcs(names: list[str], nodes: int) -> dict[str, VcState]:
    share = 1 / len(names)
    limit = Resources(
        gpu=int(nodes * GPUS_PER_NODE * share),
        cpu=int(nodes * CPUS_PER_NODE * share),
        memory_mb=int(nodes * MEMORY_PER_NODE_MB * share),
    )
    return {name: VcState(name, limit=limit, used=Resources()) for name in names}


def measure(build: Callable[[], tuple[list[NodeState], dict[str, VcState], list[JobRequest]]], runs: int):
    timings, cpu_timings, placed_tasks, pending_jobs, jobs_count, tasks_count = [], [], 0, 0, 0, 0
    for _ in range(runs):
        nodes, vcs, jobs = build()  # fresh inputs each run; building them is not timed
        started, cpu_started = time.perf_counter(), time.process_time()
        result = place(nodes, vcs, jobs)
        timings.append(time.perf_counter() - started)
        cpu_timings.append(time.process_time() - cpu_started)
        placed_tasks = sum(len(placements) for placements in result.placed.values())
        pending_jobs = len(result.pending)
        jobs_count, tasks_count = len(jobs), sum(len(job.tasks) for job in jobs)
    return (
        jobs_count,
        tasks_count,
        placed_tasks,
        pending_jobs,
        statistics.median(timings),
        min(timings),
        statistics.median(cpu_timings),
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--tasks", type=int, default=10_000)
    parser.add_argument("--nodes", type=int, default=1_000)
    args = parser.parse_args()
    one_vc, four_vcs = ["default"], ["vc-a", "vc-b", "vc-c", "vc-d"]
    scenarios = {
        "idle cluster, 1 VC": lambda: (
            make_nodes(args.nodes),
            make_vcs(one_vc, args.nodes),
            make_jobs(args.tasks, one_vc),
        ),
        "idle cluster, 4 VCs": lambda: (
            make_nodes(args.nodes),
            make_vcs(four_vcs, args.nodes),
            make_jobs(args.tasks, four_vcs),
        ),
        "half-busy cluster, 4 VCs": lambda: (
            make_nodes(args.nodes, busy_fraction=0.5),
            make_vcs(four_vcs, args.nodes),
            make_jobs(args.tasks, four_vcs),
        ),
    }
    print(
        f"placement pass: {args.tasks} pending tasks, {args.nodes} nodes x {GPUS_PER_NODE} GPUs, median of {args.runs}"
    )
    header = (
        f"{'scenario':<26} {'jobs':>6} {'tasks':>6} {'placed':>7} {'waiting jobs':>13} "
        f"{'ms/pass':>8} {'best ms':>8} {'CPU ms':>7} {'placements/s':>13}"
    )
    print(header)
    print("-" * len(header))
    for name, build in scenarios.items():
        jobs, tasks, placed, pending, median, best, cpu = measure(build, args.runs)
        rate = placed / median if median else 0.0
        print(
            f"{name:<26} {jobs:>6} {tasks:>6} {placed:>7} {pending:>13} "
            f"{median * 1000:>8.1f} {best * 1000:>8.1f} {cpu * 1000:>7.1f} {rate:>13,.0f}"
        )


if __name__ == "__main__":
    main()
