"""The sampler: every PAI_SAMPLE_SECONDS it reads each running task's resources from its node's
executor (and the GPUs it holds from nvidia-smi) and stores one TaskSample per task.

It runs as a process of its own (`manage.py runsampler`, beside `runscheduler`), so neither a slow
engine nor the CPU it spends reading hundreds of tasks ever holds up a scheduler pass (a thread in
the scheduler's process would share its interpreter lock: bench/metrics.py). One sampler is active
at a time: it holds the `sampler` lease (scheduling.lease), as the scheduler holds its own.

Its work is a list of duties (`Duty`: a name, a period, a function), each on its own timer with its
own last run, as Slurm's controller runs its background duties: one that fails is logged and tried
again one period later, and no other runs again for it. Every pass: the samples, the tasks'
training metrics (scheduling/training_metrics.py), the adaptive searches that read them
(jobs/sweep_search.py: prune runs behind, make new trials), the interactive apps' watcher
(scheduling/app_watch.py), the alert rules and the usage of the jobs whose runs ended since
(scheduling/usage_rollup.py); every minute each VC's usage and queue for the dashboard
(VcSample); every hour today's and yesterday's usage whole, the fold of raw samples older than
PAI_SAMPLE_RAW_HOURS into one per minute and the deletion of those older than PAI_SAMPLE_KEEP_DAYS,
finished jobs' expired files, the outbox's notices sent or given up a month ago and Monday's
weekly reports. The last runs are the process's: a sampler that starts (a standby that takes the
lease over included) runs each duty at its first pass as the holder.
"""

from __future__ import annotations

import itertools
import logging
import threading
import time
from collections import defaultdict
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import timedelta
from statistics import fmean

from django.conf import settings
from django.db import close_old_connections, transaction

from clusters.executors.base import ResourceSample, TaskHandle
from clusters.gpus import GpuReading, read_local_gpus
from jobs import outbox
from jobs.models import Task, TaskSample, TaskState
from jobs.sweep_search import advance_searches
from scheduling import executors
from scheduling.alerts import evaluate_rules
from scheduling.app_watch import watch_apps
from scheduling.lease import Holder, Lease
from scheduling.models import VcSample
from scheduling.retention import remove_expired
from scheduling.training_metrics import MetricReader
from scheduling.usage_rollup import last_ended_run, roll_up_ended, roll_up_recent
from scheduling.vc_samples import record_vc_samples
from scheduling.weekly_report import send_weekly_reports

log = logging.getLogger("pai.sampler")

LEASE_NAME = "sampler"
LEASE_MIN_S = 30  # a standby elsewhere takes over this long (or 3 periods) after the active one stopped renewing
EVERY_PASS = 0.0
MINUTE = 60.0
HOUR = 3600.0
READ_THREADS = 8  # nodes read side by side
MB = 1024 * 1024


@dataclass
class Duty:
    """One of the sampler's periodic duties, on its own timer (as Slurm's controller runs its
    background duties): due `period` seconds after its last run (0: every pass). A failure is
    logged and tried again one period later: it never makes another duty run again."""

    name: str
    period: float
    function: Callable[[], object]
    last_run: float = float("-inf")  # monotonic seconds; a new process runs each duty at its first pass

    def run_if_due(self, now: float) -> None:
        if now - self.last_run < self.period:
            return
        self.last_run = now  # (a failed run counts: retried one period later, not every pass)
        try:
            self.function()
        except Exception:
            again = f"in {self.period:g} s" if self.period else "next pass"
            log.exception("sampler duty %r failed; trying again %s", self.name, again)
            close_old_connections()  # a connection the failure broke is not the next duty's failure


class Sampler:
    def __init__(
        self,
        gpu_reader: Callable[[], dict[int, GpuReading]] = read_local_gpus,
        active: Callable[[], bool] = lambda: True,
    ):
        self.gpu_reader = gpu_reader
        self.active = active  # a standby sampler waits: one sample per task and period
        # The last reading of each task attempt (by executor id): the next one gives the rates.
        self._previous: dict[str, tuple[float, ResourceSample]] = {}
        self._rolled_up_after = 0  # the last ended attempt (TaskAttempt id) the usage counts
        self.metrics = MetricReader()
        # In order: the whole days' rollup before the ended runs' (which then has little left) and
        # before the fold (it reads the raw samples).
        self.duties = [
            Duty("sample", EVERY_PASS, self.sample_once),
            Duty("training metrics", EVERY_PASS, self.metrics.read),
            Duty("adaptive search", EVERY_PASS, advance_searches),  # (on the metrics just read)
            Duty("watch apps", EVERY_PASS, watch_apps),
            Duty("alerts", EVERY_PASS, evaluate_rules),
            Duty("vc samples", MINUTE, lambda: record_vc_samples(time.time())),
            Duty("usage of today and yesterday", HOUR, self.roll_up_recent_days),
            Duty("usage of ended runs", EVERY_PASS, self.roll_up_ended_runs),
            Duty("fold and prune samples", HOUR, lambda: fold_and_prune(time.time())),
            Duty("remove expired files", HOUR, remove_expired),
            Duty("prune the outbox", HOUR, outbox.prune),
            Duty("weekly reports", HOUR, send_weekly_reports),
        ]

    # ---- one round -------------------------------------------------------------------------
    def sample_once(self) -> int:
        """Read every running task once and store the samples; returns how many were stored."""
        tasks = list(
            Task.objects.filter(state=TaskState.RUNNING, node__isnull=False)
            .exclude(executor_id="")
            .select_related("node")
            .only(
                "id",
                "executor_id",
                "ip",
                "gpus",
                "started_at",
                "node__name",
                "node__executor",
                "node__address",
                "node__docker_url",
            )
        )
        if not tasks:
            self._previous.clear()
            return 0
        by_node: dict[int | None, list[Task]] = defaultdict(list)
        for task in tasks:
            by_node[task.node_id].append(task)
        readings: dict[str, ResourceSample] = {}
        with ThreadPoolExecutor(max_workers=min(READ_THREADS, len(by_node))) as pool:
            for node_readings in pool.map(_read_node, by_node.values()):
                readings.update(node_readings)
        now = time.time()
        gpus = self.gpu_reader() if any(task.gpus and _is_local(task) for task in tasks) else {}
        rows = [
            self._row(task, readings[task.executor_id], now, gpus) for task in tasks if task.executor_id in readings
        ]
        TaskSample.objects.bulk_create(rows, batch_size=500)
        running = {task.executor_id for task in tasks}
        self._previous = {key: value for key, value in self._previous.items() if key in running}
        return len(rows)

    def _row(self, task: Task, reading: ResourceSample, now: float, gpus: dict[int, GpuReading]) -> TaskSample:
        previous = self._previous.get(task.executor_id)
        self._previous[task.executor_id] = (now, reading)
        if previous is None:  # the first reading: the average since the task started
            since = task.started_at.timestamp() if task.started_at else now - settings.PAI_SAMPLE_SECONDS
            previous = (
                since,
                ResourceSample(
                    cpu_seconds=0, memory_bytes=0, net_rx_bytes=0, net_tx_bytes=0, disk_read_bytes=0, disk_write_bytes=0
                ),
            )
        seconds = max(now - previous[0], 0.001)
        before = previous[1]
        held = [gpus[index] for index in task.gpus or [] if index in gpus] if _is_local(task) else []
        return TaskSample(
            task_id=task.id,
            at=int(now),
            cpu_milli=max(0, round((reading.cpu_seconds - before.cpu_seconds) / seconds * 1000)),
            memory_mb=round(reading.memory_bytes / MB),
            memory_limit_mb=round(reading.memory_limit_bytes / MB) if reading.memory_limit_bytes else None,
            net_rx_kbps=_rate(reading.net_rx_bytes, before.net_rx_bytes, seconds),
            net_tx_kbps=_rate(reading.net_tx_bytes, before.net_tx_bytes, seconds),
            disk_read_kbps=_rate(reading.disk_read_bytes, before.disk_read_bytes, seconds),
            disk_write_kbps=_rate(reading.disk_write_bytes, before.disk_write_bytes, seconds),
            gpus=[[g.index, g.utilization_percent, g.memory_used_mb] for g in held] or None,
        )

    def roll_up_recent_days(self) -> None:
        """Usage of today and yesterday whole (running tasks' time so far, late samples: before the
        pruning folds them)."""
        after = last_ended_run()  # (what ends while the days are rolled up, the ended runs' duty takes)
        roll_up_recent()
        self._rolled_up_after = after

    def roll_up_ended_runs(self) -> None:
        """Usage of the jobs whose runs ended since the last pass."""
        self._rolled_up_after = roll_up_ended(self._rolled_up_after)

    # ---- the loop --------------------------------------------------------------------------
    def run_due(self, now: float) -> None:
        """One pass: each duty that is due, at `now` (monotonic seconds)."""
        for duty in self.duties:
            duty.run_if_due(now)

    def run(self, stop: threading.Event) -> None:
        while not stop.is_set():
            started = time.monotonic()
            try:
                if self.active():
                    self.run_due(started)
            except Exception:
                log.exception("the sampler's lease could not be taken; trying again next period")
            finally:
                close_old_connections()
            stop.wait(max(0.0, settings.PAI_SAMPLE_SECONDS - (time.monotonic() - started)))


def sampler_lease(holder: Holder | str | None = None) -> Lease:
    """The sampler's lease (scheduling.lease, as the scheduler's, under its own name): held for
    three periods; a sampler restarted on the same machine takes an ended one's at once."""
    ttl = timedelta(seconds=max(LEASE_MIN_S, 3 * settings.PAI_SAMPLE_SECONDS))
    return Lease(holder or Holder.here(), name=LEASE_NAME, ttl=ttl)


def _read_node(tasks: list[Task]) -> dict[str, ResourceSample]:
    """One node's tasks, read in one executor call (on a pool thread: nodes side by side), on the
    node's lane (scheduling.executors): a hung engine costs one round one period at most, and the
    next rounds nothing while its call runs on (NodeSilent at once: that node's tasks are skipped)."""
    node = tasks[0].node
    assert node is not None
    handles = [TaskHandle(task.executor_id, task.ip) for task in tasks]
    try:
        return executors.node_executor(node).sample(handles)
    except Exception as exc:  # one node's trouble must not cost the others their samples
        log.warning("sampling node %s failed: %s", node.name, exc)
        return {}


def _is_local(task: Task) -> bool:
    """nvidia-smi runs here, so it only sees the GPUs of nodes on this machine."""
    return task.node is not None and not task.node.docker_url


def _rate(now: int | None, before: int | None, seconds: float) -> int | None:
    if now is None:
        return None
    return max(0, round((now - (before or 0)) / seconds / 1024))


# ---- retention -----------------------------------------------------------------------------
def fold_and_prune(now: float) -> tuple[int, int]:
    """Fold raw samples older than the raw retention into per-minute ones and delete samples
    older than the whole retention. Returns (raw samples folded, samples deleted)."""
    fold_before = int(now - settings.PAI_SAMPLE_RAW_HOURS * 3600)
    raw = TaskSample.objects.filter(period=0, at__lt=fold_before)
    rows = raw.order_by("task_id", "at").iterator(chunk_size=5000)
    minutes = [
        _fold(list(group)) for _, group in itertools.groupby(rows, key=lambda sample: (sample.task_id, sample.at // 60))
    ]
    with transaction.atomic():
        folded, _ = raw.delete()
        TaskSample.objects.bulk_create(minutes, batch_size=1000)
    expired = int(now - settings.PAI_SAMPLE_KEEP_DAYS * 86400)
    deleted, _ = TaskSample.objects.filter(at__lt=expired).delete()
    VcSample.objects.filter(at__lt=expired).delete()
    return folded, deleted


def _fold(samples: list[TaskSample]) -> TaskSample:
    """One minute of a task: average rates, peak memory (an OOM's peak must survive the fold)."""
    first = samples[0]

    def mean(field: str) -> int | None:
        values = [getattr(s, field) for s in samples if getattr(s, field) is not None]
        return round(fmean(values)) if values else None

    gpu_rows = [row for s in samples for row in s.gpus or []]
    by_index = {index: [r for r in gpu_rows if r[0] == index] for index in {r[0] for r in gpu_rows}}
    return TaskSample(
        task_id=first.task_id,
        at=first.at - first.at % 60,
        period=60,
        cpu_milli=mean("cpu_milli") or 0,
        memory_mb=max(s.memory_mb for s in samples),
        memory_limit_mb=samples[-1].memory_limit_mb,
        net_rx_kbps=mean("net_rx_kbps"),
        net_tx_kbps=mean("net_tx_kbps"),
        disk_read_kbps=mean("disk_read_kbps"),
        disk_write_kbps=mean("disk_write_kbps"),
        gpus=[[i, round(fmean(r[1] for r in rs)), max(r[2] for r in rs)] for i, rs in sorted(by_index.items())] or None,
    )
