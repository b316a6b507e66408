"""Usage counts every GPU-hour a job held: N short jobs in real containers, their usage against
what the Docker engine says they ran.

    .venv/bin/python bench/usage_runs.py [N] [--slots S]      (default N=200, S=8)

N one-task jobs of `sleep 2`..`sleep 11` (seeded) on the local Docker engine, through
jobs.actions.submit_job and the real scheduler's passes (its idle wait between them, as
`runscheduler`) with S one-CPU slots on the node, then the sampler's per-period usage pass
(scheduling.usage_rollup.roll_up_ended). Each container's run is read apart from the portal, as
the engine has it: its `start` and `die` events, followed live, and the start and end it recorded
(State.StartedAt / FinishedAt, inspected as it dies; `die` comes some ms later, after the engine's
teardown). The usage's memory-MB-seconds and CPU-seconds are compared with those runs x each
job's allocation. Goal: every job in the usage, each recorded run inside its container's
start..die, none ending before its start, and the usage within 1 % of the engine's runs
(tests/docker/test_usage.py checks the same with a few jobs). Needs the Docker engine and the portal's base image;
its containers and networks carry a namespace of their own and are removed after.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import random
import shutil
import sys
import threading
import time
import uuid
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.throughput import setup_django  # noqa: E402

if TYPE_CHECKING:
    import docker

CPU, MEMORY_MB = 1, 256
EVENT_LAG_S = 0.5  # the engine records a start before its `start` event (>0.1 s on a busy box)
JOB_TEXT = (
    "protocolVersion: 2\nname: {name}\ntype: job\n"
    "prerequisites:\n  - {{name: image, type: dockerimage, uri: pai-portal/base:latest}}\n"
    "taskRoles:\n  main:\n    instances: 1\n    dockerImage: image\n"
    f"    resourcePerInstance: {{{{cpu: {CPU}, memoryMB: {MEMORY_MB}, gpu: 0}}}}\n"
    "    commands: ['sleep {seconds}']\n"
)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("n", type=int, nargs="?", default=200)
    parser.add_argument("--slots", type=int, default=8)
    args = parser.parse_args()
    namespace = f"paibench{uuid.uuid4().hex[:8]}"
    setup_django(PAI_DOCKER_NAMESPACE=namespace)
    import docker

    try:
        run(args.n, args.slots, namespace)
    finally:
        remove_namespace(docker.APIClient(timeout=60), namespace)
        shutil.rmtree(os.environ["PAI_VAR_DIR"], ignore_errors=True)  # (setup_django's scratch state)


def run(n: int, slots: int, namespace: str) -> None:
    from django.contrib.auth import get_user_model

    from clusters.models import Node
    from jobs.actions import submit_job
    from jobs.models import Job, JobState, TaskAttempt
    from scheduling.models import UsageDay
    from scheduling.scheduler import Scheduler
    from scheduling.usage_rollup import roll_up_ended

    Node.objects.create(name="docker-local", executor="docker", address="127.0.0.1", cpus=slots, memory_mb=65536)
    user, _ = get_user_model().objects.get_or_create(username="bench")
    rng = random.Random(43)
    asked = [rng.randint(2, 11) for _ in range(n)]
    began = time.perf_counter()
    with ContainerRuns(namespace) as followed:
        for i, seconds in enumerate(asked):
            submit_job(user, JOB_TEXT.format(name=f"short-{i}", seconds=seconds))
        scheduler = Scheduler()
        deadline = time.monotonic() + 120 + 15 * n / slots
        while Job.objects.exclude(state__in=[JobState.SUCCEEDED, JobState.FAILED]).exists():
            if time.monotonic() > deadline:
                raise SystemExit(f"jobs not finished in time: {dict(Job.objects.values_list('name', 'state'))}")
            if not scheduler.run_once():
                scheduler.idle_wait(0.05)
        scheduler.release_lease()
        took = time.perf_counter() - began
        attempts = list(TaskAttempt.objects.values_list("executor_id", "started_at", "finished_at"))
        runs = followed.of(executor_id for executor_id, _, _ in attempts)
    roll_up_ended(0)  # the sampler's per-period pass

    recorded = {key: (s.timestamp(), f.timestamp()) for key, s, f in attempts if s is not None and f is not None}
    backwards = sum(1 for started, finished in recorded.values() if finished < started)
    outside = [
        f"{key[:12]}: start {started - runs[key].start:+.3f} s, end {finished - runs[key].die:+.3f} s"
        if key in runs
        else f"{key[:12]}: no events"
        for key, (started, finished) in recorded.items()
        if key not in runs or not runs[key].start - EVENT_LAG_S <= started <= finished <= runs[key].die
    ]
    engine = sum(run.engine_seconds for run in runs.values())
    evented = sum(run.die - run.start for run in runs.values())
    rows = UsageDay.objects.all()
    cpu = sum(rows.values_list("cpu_seconds", flat=True))
    memory = sum(rows.values_list("memory_mb_seconds", flat=True))
    jobs_in_usage = rows.values("job_id").distinct().count()
    failed = Job.objects.filter(state=JobState.FAILED).count()

    def line(label: str, usage: float, truth: float, digits: int = 0) -> None:
        off = f"{100 * (usage - truth) / truth:+.2f} %" if truth else "n/a"
        print(f"{label:<44}{usage:>12,.{digits}f}{truth:>16,.{digits}f}{off:>12}")

    print(f"{n} jobs of sleep 2-11 s (asked {sum(asked):,} s in all) on {slots} slots: {took:.0f} s, {failed} failed")
    print(f"{'':<44}{'usage':>12}{'the engine':>16}{'difference':>12}")
    line("jobs", jobs_in_usage, len(runs))
    line("memory MB-s vs the engine's runs x 256 MB", memory, MEMORY_MB * engine)
    line("memory MB-s vs start..die events x 256 MB", memory, MEMORY_MB * evented)
    line("CPU-s vs the engine's runs x 1 CPU", cpu, CPU * engine)
    print(f"runs recorded ending before their start: {backwards}; outside their container's start..die: {len(outside)}")
    for run in outside:  # (how far from its container's events)
        print(f"  {run}")
    within = len(runs) == n == jobs_in_usage and not backwards and not outside
    within = within and abs(memory - MEMORY_MB * engine) <= 0.01 * MEMORY_MB * engine
    within = within and abs(cpu - CPU * engine) <= 0.01 * CPU * engine
    print(f"goal (every job counted, each run the engine's, within 1 %): {'ok' if within else 'MISSED'}")


@dataclass
class Run:
    """A container's run: its `start` and `die` events, and the start and end the engine recorded
    (State.StartedAt / FinishedAt, read as it died; its events' times where already removed)."""

    start: float
    die: float
    engine_seconds: float


class ContainerRuns:
    """Each container's run as the engine has it, followed while open (the engine replays only its
    last 256 events, whoever's they are)."""

    def __init__(self, namespace: str) -> None:
        import docker

        from clusters.executors.docker import MARKER_LABEL

        self._api = docker.APIClient(timeout=60)
        filters = {"type": "container", "label": f"{MARKER_LABEL}={namespace}", "event": ["start", "die"]}
        self._stream = self._api.events(since=int(time.time()) - 1, filters=filters, decode=True)
        self._started: dict[str, float] = {}
        self.runs: dict[str, Run] = {}
        self._follower = threading.Thread(target=self._follow, daemon=True)

    def __enter__(self) -> ContainerRuns:
        self._follower.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stream.close()

    def _follow(self) -> None:
        with contextlib.suppress(Exception):  # (the stream closed)
            for event in self._stream:
                at = event["timeNano"] / 1e9
                if event["status"] == "start":
                    self._started[event["id"]] = at
                elif event["id"] in self._started:
                    start = self._started.pop(event["id"])
                    self.runs[event["id"]] = Run(start, at, self._engine_seconds(event["id"]) or at - start)

    def _engine_seconds(self, container_id: str) -> float | None:
        from clusters.executors.docker import exited_status

        try:
            status = exited_status(self._api.inspect_container(container_id))
        except Exception:  # (removed already)
            return None
        if status.started_at is None or status.finished_at is None:
            return None
        return (status.finished_at - status.started_at).total_seconds()

    def of(self, container_ids: Iterable[str], timeout: float = 10.0) -> dict[str, Run]:
        """The runs of these containers, once their `die` events have come (or the timeout)."""
        wanted = set(container_ids)
        deadline = time.monotonic() + timeout
        while not wanted <= self.runs.keys() and time.monotonic() < deadline:
            time.sleep(0.05)
        return {key: run for key, run in self.runs.items() if key in wanted}


def remove_namespace(api: docker.APIClient, namespace: str) -> None:
    """This run's containers and networks (the engine is shared)."""
    from clusters.executors.docker import MARKER_LABEL

    label = {"label": f"{MARKER_LABEL}={namespace}"}
    for container in api.containers(all=True, filters=label):
        api.remove_container(container["Id"], force=True)
    for network in api.networks(filters=label):
        api.remove_network(network["Id"])


if __name__ == "__main__":
    main()
