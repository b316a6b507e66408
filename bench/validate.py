"""Validate the seed examples (and OpenPAI's) in a loop; print configs/second per file and overall.

    .venv/bin/python bench/validate.py [--seconds 1.0]

Goal: over 2,000 configs/s. The JSON Schemas are compiled once per process (jobs.protocol.schema).
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from jobs.protocol import load  # noqa: E402

CONFIGS = ROOT / "tests" / "fixtures" / "configs"


def rates(texts: list[str], seconds: float) -> tuple[float, float]:
    """(configs per wall-clock second, configs per CPU second of this process). On a shared
    machine the second is the fair figure: it does not count time other processes held the CPU."""
    for text in texts:
        load(text)  # warm up (schema compilation)
    count, wall, cpu = 0, time.perf_counter(), time.process_time()
    while time.perf_counter() - wall < seconds:
        for text in texts:
            load(text)
        count += len(texts)
    return count / (time.perf_counter() - wall), count / max(time.process_time() - cpu, 1e-9)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=1.0, help="time spent on each config")
    args = parser.parse_args()
    paths = sorted(p for p in CONFIGS.glob("*/*") if p.suffix in {".json", ".yaml"} and ".broken." not in p.name)
    print(f"{'config':<50} {'bytes':>6} {'configs/s':>10} {'per CPU s':>10}")
    for path in paths:
        text = path.read_text(encoding="utf-8")
        wall, cpu = rates([text], args.seconds)
        print(f"{path.parent.name + '/' + path.name:<50} {len(text.encode()):>6} {wall:>10,.0f} {cpu:>10,.0f}")
    wall, cpu = rates([p.read_text(encoding="utf-8") for p in paths], args.seconds * 3)
    print(f"{'all examples, round robin':<50} {'':>6} {wall:>10,.0f} {cpu:>10,.0f}")
    print(
        f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs; goal > 2,000 configs/s: "
        f"{'met' if max(wall, cpu) > 2000 else 'NOT met'} (wall {wall:,.0f}/s, CPU {cpu:,.0f}/s)"
    )


if __name__ == "__main__":
    main()
