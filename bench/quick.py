"""`make bench-quick`: the headline benchmarks, small enough for a few minutes, each figure printed
beside the one last recorded in docs/performance.md ("The quick check"), a drop over 20 % flagged.

    .venv/bin/python bench/quick.py [--only throughput,idle,api,scale] [--skip-slurm] [--record]

- throughput: `bench/throughput.py 100 --slots 2` (trivial jobs end to end, beside Slurm);
- idle: `bench/idle_latency.py 20` (one job at a time on an idle cluster, beside `srun true`);
- api: `bench/api.py` with 600 submits, 800 detail GETs, 40 lists of 1,000 rows (beside sbatch);
- scale: `bench/scheduler_scale.py` with 20,000 finished and 2,000 waiting jobs on 200 nodes.
Each runs as its own process and writes its figures as JSON (--json). Wall-time figures are only
worth comparing on a quiet machine (the load average is printed first); the CPU figures (the
server's per request, the portal's per job and per pass) move much less with the load.
--record writes this run's figures into the table (do it from a quiet machine's run). The exit
status is 1 when a figure dropped by more than 20 %.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import re
import subprocess
import sys
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import NamedTuple

ROOT = Path(__file__).resolve().parent.parent
DOC = ROOT / "docs" / "performance.md"
BEGIN, END = "<!-- bench-quick:begin -->", "<!-- bench-quick:end -->"
DROP = 0.20  # a change for the worse past this fraction is flagged


class Figure(NamedTuple):
    key: str  # <bench>.<figure in its JSON>
    label: str
    better: str  # "higher", "lower", or "-" (shown, never flagged: Slurm's own)
    unit: str


FIGURES = [
    Figure("throughput.portal_jobs_s", "trivial jobs end to end, 2 slots", "higher", "jobs/s"),
    Figure("throughput.slurm_jobs_s", "Slurm, same jobs and slots", "-", "jobs/s"),
    Figure("throughput.ratio", "portal / Slurm", "higher", "x"),
    Figure("throughput.cpu_submit_ms", "CPU per job: submit", "lower", "ms"),
    Figure("throughput.cpu_scheduler_ms", "CPU per job: scheduler", "lower", "ms"),
    Figure("throughput.cpu_tasks_ms", "CPU per job: its task's start, run and end", "lower", "ms"),
    Figure("idle.started_p50_ms", "idle cluster: submit -> task started p50", "lower", "ms"),
    Figure("idle.ended_p95_ms", "idle cluster: submit -> SUCCEEDED p95", "lower", "ms"),
    Figure("idle.slurm_p50_ms", "srun true p50, same run", "-", "ms"),
    Figure("api.submits_s", "REST submits, 8 clients", "higher", "/s"),
    Figure("api.sbatch_s", "sbatch submits, same run", "-", "/s"),
    Figure("api.submit_ratio", "REST submits / sbatch", "higher", "x"),
    Figure("api.detail_p95_ms", "detail GET p95", "lower", "ms"),
    Figure("api.list1000_p95_ms", "1000-job list GET p95", "lower", "ms"),
    Figure("api.cpu_submit_ms", "server CPU per submit", "lower", "ms"),
    Figure("api.cpu_detail_ms", "server CPU per detail GET", "lower", "ms"),
    Figure("api.cpu_list1000_ms", "server CPU per 1000-job list", "lower", "ms"),
    Figure("scale.pass_p95_ms", "scheduler pass p95 (2,000 waiting, 200 nodes)", "lower", "ms"),
    Figure("scale.pass_cpu_p50_ms", "scheduler pass CPU p50", "lower", "ms"),
]


def commands(skip_slurm: bool) -> dict[str, list[str]]:
    slurm = ["--skip-slurm"] if skip_slurm else []
    return {
        "throughput": ["bench/throughput.py", "100", "--slots", "2", *slurm],
        "idle": ["bench/idle_latency.py", "20", *slurm],
        "api": [
            "bench/api.py",
            *("--submits", "600", "--details", "800", "--lists", "100", "--big-lists", "40"),
            *slurm,
        ],
        "scale": ["bench/scheduler_scale.py", "--finished", "20000", "--waiting", "2000", "--nodes", "200"],
    }


def run(name: str, argv: list[str], folder: Path) -> dict[str, float | None]:
    out = folder / f"{name}.json"
    print(f"--- {name}: {' '.join(argv)}", flush=True)
    done = subprocess.run([sys.executable, *argv, "--json", str(out)], cwd=ROOT, check=False)
    if done.returncode != 0 or not out.exists():
        print(f"--- {name} failed (exit {done.returncode}): its figures are missing", flush=True)
        return {}
    return {f"{name}.{key}": value for key, value in json.loads(out.read_text()).items()}


def recorded(text: str) -> dict[str, float]:
    """The figures in the doc's table, by key (its second column)."""
    found: dict[str, float] = {}
    block = text.partition(BEGIN)[2].partition(END)[0]
    for line in block.splitlines():
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        if len(cells) >= 3 and cells[1].startswith("`"):
            with_number = re.match(r"[-+]?[0-9.]+", cells[2].replace(",", ""))
            if with_number:
                found[cells[1].strip("`")] = float(with_number.group())
    return found


def change(figure: Figure, now: float, then: float) -> tuple[str, bool]:
    """The change in words, and whether it is a drop past DROP."""
    if then == 0:
        return "", False
    delta = (now - then) / then
    worse = -delta if figure.better == "higher" else delta
    return f"{delta:+.0%}", figure.better != "-" and worse > DROP


def table(figures: Mapping[str, float | None], load: str, date: str) -> str:
    lines = [
        BEGIN,
        f"Recorded {date}, load average {load} (`bench/quick.py --record`).",
        "",
        "| figure | key | recorded | better |",
        "|---|---|---|---|",
    ]
    for figure in FIGURES:
        value = figures.get(figure.key)
        shown = "n/a" if value is None else f"{value:.2f} {figure.unit}"
        lines.append(f"| {figure.label} | `{figure.key}` | {shown} | {figure.better} |")
    return "\n".join([*lines, END])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument(
        "--only", default="throughput,idle,api,scale", help="comma list of throughput, idle, api, scale"
    )
    parser.add_argument("--skip-slurm", action="store_true", help="the portal alone (no Slurm figures)")
    parser.add_argument("--record", action="store_true", help="write this run's figures into docs/performance.md")
    args = parser.parse_args()
    load = f"{os.getloadavg()[0]:.1f}"
    print(f"load average {load} at the start" + ("" if float(load) < 1.5 else ": wall times are not comparable now"))
    figures: dict[str, float | None] = {}
    with tempfile.TemporaryDirectory(prefix="pai-bench-quick-") as folder:
        for name, argv in commands(args.skip_slurm).items():
            if name in args.only.split(","):
                figures |= run(name, argv, Path(folder))
    text = DOC.read_text()
    before = recorded(text)
    dropped = []
    print(f"\n{'figure':<48}{'now':>12}{'recorded':>12}{'change':>9}")
    for figure in FIGURES:
        now = figures.get(figure.key)
        if now is None:
            continue
        then = before.get(figure.key)
        words, drop = change(figure, now, then) if then is not None else ("", False)
        shown_then = f"{then:.2f}" if then is not None else "-"
        flag = "  DROP > 20 %" if drop else ""
        print(f"{figure.label:<48}{now:>12.2f}{shown_then:>12}{words:>9}{flag}")
        if drop:
            dropped.append(figure.label)
    if args.record:
        date = datetime.date.today().isoformat()
        kept = {**before, **{key: value for key, value in figures.items() if value is not None}}
        block = table(kept, load, date)
        head, _, rest = text.partition(BEGIN)
        DOC.write_text(head + block + rest.partition(END)[2])
        print(f"\nrecorded in {DOC.relative_to(ROOT)}")
    if dropped:
        print(f"\n{len(dropped)} figure(s) dropped by more than {DROP:.0%}: {', '.join(dropped)}")
        sys.exit(1)


if __name__ == "__main__":
    main()
