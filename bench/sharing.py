"""Sharing a scarce GPU cluster, simulated: a trace of jobs through the real scheduler, per policy.

    .venv/bin/python bench/sharing.py [--gpus 2000] [--jobs N] [--seed 1] [--limit-asked 1.5,3] [--trace FILE]
                                      [--policies strict,sharing,...] [--tick 5] [--write-trace FILE] [--json FILE]
                                      [--processes N]

A generated (seeded) or recorded trace (JSON lines, `--trace`; `--write-trace` saves the generated
one) of several virtual clusters with quotas, bursts of arrivals, gangs of 1-16 tasks x 1-8 GPUs,
classes prod / test / oppo, durations and time limits (1.5-3x the duration, as users ask) runs on
`--gpus` GPUs of fake nodes (8 GPUs each) through the real scheduler passes (`Scheduler.run_once`:
placement, quotas, fair share, priority classes, preemption, whatever the build has) and a real
database (SQLite in a temp dir), once per policy.

Time is simulated: the portal's clock (`timezone.now`, `time.time`, `time.monotonic`) runs at real
speed while a pass runs and jumps between passes to the next event (an arrival, a task's end, a
preempted task done saving, a grace deadline), at least `--tick` seconds on. Passes that did work
follow each other at once, as `runscheduler`'s do. The fake executor (`SimExecutor`) starts nothing:
a task "runs" for its job's remaining work in simulated time, answers SIGTERM (a preemption) by
saving its progress for the job's `save_s` seconds and exiting, and loses the attempt's work if it
is killed first. Each pass is timed as it runs (perf_counter around `run_once`, and its process CPU
time: on a shared box the load swells the first, not the second). The node heartbeats of the idle
passes a jump skips run untimed before it (a real pass pings the nodes due in its round, not all).

`--processes N` runs the policies side by side in N processes forked after the migrations, each on
a copy of the migrated SQLite database (a policy's run is one process's CPU: on a box with CPUs to
spare the run takes about as long as its slowest policy).

A policy is a few VC settings and job fields (POLICIES): `strict` is hard quotas, FIFO, no classes,
no backfill; `sharing` turns on fair share, the trace's classes and borrowing (the settings of
features not in the build are reported as n/a); `backfill` is `sharing` with backfill on the time
limits, `best-effort` is `sharing` with Kueue's BestEffortFIFO.

Prints, per policy side by side: GPU utilisation while any job waits (and over the whole run), waits
per class and per VC (p50 / p95), preemptions, work lost to preemptions past the grace, how long
preempting jobs waited (reclaim), the backfill reservations given and whether backfill kept its
promises, the expected start's error, scheduler pass time p50 / p95, and the run's invariants (no
GPU given twice, every job ended, quota overruns).

The expected start's error, |expected - actual start| / wait, is measured for each job that waited
more than a tick (its first attempt) at a defined moment: **at submit**, the expected start the
first pass that queued it showed (`Job.expected_start_at`, as the job page and the API show it;
the honest one: what a user reads when deciding whether to wait). Beside it, each job's median over
its wait: the estimates shown, each weighed by how long it was shown (until the next pass changed it,
the last one until the start). Both as p50 / p90 over the jobs. The at-submit error is also split by
what started each job, the plan's known blind spots: it preempted others for its room, it ran on
borrowed quota, backfill started it ahead of its VC's first job, or its turn in the queue came; and
shown apart for the jobs no job submitted after their estimate started ahead of (by the later of
their start and their expected start): a later job of a higher class, of a user with less recent
usage, or one backfill or a moved reservation lets through changes what an estimate at submit could
not know. `--run-times oracle` gives the plan the real run times (every running job's real end, a
preempted one's when its save is done, every waiting job's real remaining work, a preempting job's
victims' real ends): what error is left is the plan's own and the later arrivals'.

Backfill's promise: a job backfilled ahead of a VC's first job promises it the reserved start in
force then (the placement's own result, read after each pass). A violation is a start later than
the last such promise by more than a tick. A re-plan sets a promise aside: its job lost first place
(a higher class came first, it was preempted or reclaimed), or its reservation moved later in a
placement that started a job taken before it in the queue, of its VC or on its reserved nodes (a
higher class, a requeued or a preempting job took the room; the plan moves a reservation it can no
longer meet). A reservation that moves later with no such cause keeps the promise. The table also
shows the starts later than the reservation held when the job started, whatever the cause.
"""

from __future__ import annotations

import argparse
import json
import math
import random
import sys
import threading
import time
from collections import defaultdict
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.scheduler_scale import InstantExecutor, spec  # noqa: E402  (Django-free)
from clusters.executors.base import TaskHandle, TaskStatus  # noqa: E402

GPUS_PER_NODE = 8
CLASSES = {"prod": 0.2, "test": 0.6, "oppo": 0.2}  # the generated trace's mix
SAVE_EXIT_CODE = 143  # a task that saved its work after SIGTERM exits as a shell does on it
DEFAULT_JOBS = 600
# Users ask for 1.5-3x the time their job really takes (a time limit is a bound, not a forecast).
LIMIT_ASKED = (1.5, 3.0)
DEFAULT_TICK_S = 5.0
PROGRESS_S = 30.0


# ---- the trace ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class TraceVc:
    name: str
    share: float  # percent of the cluster


@dataclass(frozen=True)
class TraceJob:
    id: str
    vc: str
    user: str
    job_class: str  # prod / test / oppo (sent only by policies that use classes)
    arrival_s: float  # seconds from the trace's start
    tasks: int
    gpus: int  # per task
    duration_s: float  # work to do, in simulated seconds
    save_s: float  # how long saving takes after SIGTERM
    limit_min: int | None = None  # extras.maxRunTimeMinutes

    @property
    def total_gpus(self) -> int:
        return self.tasks * self.gpus


@dataclass
class Trace:
    vcs: list[TraceVc]
    jobs: list[TraceJob]

    def dump(self, path: Path) -> None:
        with path.open("w") as out:
            for vc in self.vcs:
                out.write(json.dumps({"type": "vc", **asdict(vc)}) + "\n")
            for job in self.jobs:
                out.write(json.dumps({"type": "job", **asdict(job)}) + "\n")

    @staticmethod
    def load(path: Path) -> Trace:
        vcs, jobs = [], []
        for number, line in enumerate(path.read_text().splitlines(), 1):
            if not line.strip():
                continue
            row = json.loads(line)
            kind = row.pop("type", "job")
            try:
                if kind == "vc":
                    vcs.append(TraceVc(**row))
                else:
                    jobs.append(TraceJob(**row))
            except TypeError as exc:
                raise SystemExit(f"{path}:{number}: {exc}") from None
        return Trace(vcs, sorted(jobs, key=lambda job: job.arrival_s))


def generate(gpus: int, jobs: int, seed: int, asked: tuple[float, float] = LIMIT_ASKED) -> Trace:
    """Four VCs (40/30/20/10 %), each with its users and a few bursts of arrivals at its own
    times, so that some VCs queue while others idle; about as much work as the cluster does over
    the arrivals' span."""
    rng = random.Random(seed)
    asks = random.Random(seed + 1)  # (the time limits' own draws: the rest of the trace as before)
    vcs = [TraceVc("vc-a", 40), TraceVc("vc-b", 30), TraceVc("vc-c", 20), TraceVc("vc-d", 10)]
    shapes: list[tuple[TraceVc, int, int, float]] = []
    for _ in range(jobs):
        vc = rng.choices(vcs, weights=[v.share for v in vcs])[0]
        quota = max(1, int(gpus * vc.share / 100))
        tasks, per_task = _shape(rng, quota)
        duration = math.exp(rng.uniform(math.log(600), math.log(4 * 3600)))  # 10 min to 4 h
        shapes.append((vc, tasks, per_task, duration))
    work = sum(tasks * per_task * duration for _, tasks, per_task, duration in shapes)
    span = work / gpus  # the arrivals' span: about the cluster's whole capacity over it
    bursts = {vc.name: sorted(rng.uniform(0, span * 0.8) for _ in range(3)) for vc in vcs}
    trace_jobs = []
    for number, (vc, tasks, per_task, duration) in enumerate(shapes):
        start = rng.choice(bursts[vc.name])
        arrival = start + rng.expovariate(1 / (span * 0.05))
        trace_jobs.append(
            TraceJob(
                id=f"j{number:05d}",
                vc=vc.name,
                user=f"{vc.name}-u{rng.randrange(4)}",
                job_class=rng.choices(list(CLASSES), weights=list(CLASSES.values()))[0],
                arrival_s=round(arrival, 1),
                tasks=tasks,
                gpus=per_task,
                duration_s=round(duration),
                save_s=round(rng.uniform(2, 20), 1),
                limit_min=math.ceil(duration * asks.uniform(*asked) / 60),
            )
        )
    return Trace(vcs, sorted(trace_jobs, key=lambda job: job.arrival_s))


def _shape(rng: random.Random, quota: int) -> tuple[int, int]:
    """(tasks, GPUs per task): mostly small, some gangs up to 16 x 8, never over the VC's quota."""
    while True:
        tasks = rng.choices([1, 2, 4, 8, 16], weights=[50, 20, 15, 10, 5])[0]
        per_task = rng.choices([1, 2, 4, 8], weights=[30, 20, 20, 30])[0]
        if tasks * per_task <= quota:
            return tasks, per_task
        if quota < GPUS_PER_NODE:
            return 1, min(per_task, quota)


# ---- policies: a few VC settings and job fields -----------------------------------------------


@dataclass(frozen=True)
class Policy:
    name: str
    vc_settings: dict[str, Any] = field(default_factory=dict)  # VirtualCluster field -> value
    job_classes: bool = False  # jobs name the trace's class (extras.hivedScheduler.jobPriorityClass)
    settings: dict[str, Any] = field(default_factory=dict)  # the portal's settings for the run (PAI_*)


SHARING = {"queue_policy": "fair-share", "lends_idle_quota": True, "backfill": False}
POLICIES = {
    "strict": Policy("strict", {"backfill": False}),
    # Every VC fair-share and lending its idle quota (oppo jobs borrow it: PAI_BORROWING_CLASSES);
    # jobs send their class, so a higher one preempts a lower one, and owners reclaim what is lent.
    "sharing": Policy("sharing", SHARING, job_classes=True),
    # The same, and `test` jobs borrow too (the admin's PAI_BORROWING_CLASSES).
    "sharing-test": Policy(
        "sharing-test", SHARING, job_classes=True, settings={"PAI_BORROWING_CLASSES": ["oppo", "test"]}
    ),
    # `sharing` with backfill on the jobs' time limits (Slurm's; the VCs' default).
    "backfill": Policy("backfill", {**SHARING, "backfill": True}, job_classes=True),
    # `sharing` with Kueue's BestEffortFIFO: a first job that does not fit holds nobody back.
    "best-effort": Policy("best-effort", {**SHARING, "queue_policy": "best-effort"}, job_classes=True),
}


def in_build() -> dict[str, bool]:
    """Which sharing features this build has (by the fields they add)."""
    from clusters.models import VirtualCluster
    from jobs.models import Job

    vc_fields = {f.name for f in VirtualCluster._meta.get_fields()}
    job_fields = {f.name for f in Job._meta.get_fields()}
    return {
        "fair share": "queue_policy" in vc_fields,
        "best-effort": "queue_policy" in vc_fields,
        "classes": True,  # (extras.hivedScheduler.jobPriorityClass orders a VC's queue since issue 30's start)
        "preemption": bool({"preempted_by", "ending_by"} & job_fields),
        "borrowing": "lends_idle_quota" in vc_fields,
        "backfill": "backfill" in vc_fields,
    }


def features(policy: Policy) -> dict[str, bool | None]:
    """Each sharing feature: used by the policy (True), not asked for (False), asked for but not in
    this build (None: reported as n/a)."""
    asked = {
        "fair share": policy.vc_settings.get("queue_policy") == "fair-share",
        "best-effort": policy.vc_settings.get("queue_policy") == "best-effort",
        "classes": policy.job_classes,
        "preemption": policy.job_classes,  # (a higher class preempts a lower one where the build can)
        "borrowing": bool(policy.vc_settings.get("lends_idle_quota")),
        "backfill": bool(policy.vc_settings.get("backfill")),
    }
    built = in_build()
    return {name: (None if wanted and not built[name] else wanted) for name, wanted in asked.items()}


# ---- the simulated clock ----------------------------------------------------------------------


class SimClock:
    """The portal's clock in the simulation: real time plus an offset that only grows (so it runs
    at real speed during a pass and jumps between passes)."""

    def __init__(self) -> None:
        self._real_time, self._real_monotonic = time.time, time.monotonic
        self.offset = 0.0
        self.origin = self._real_time()  # the trace's second 0

    def time(self) -> float:
        return self._real_time() + self.offset

    def monotonic(self) -> float:
        return self._real_monotonic() + self.offset

    def now(self) -> datetime:
        return datetime.fromtimestamp(self.time(), tz=UTC)

    def sim(self) -> float:
        """Seconds since the trace's start."""
        return self.time() - self.origin

    def advance_to(self, sim_s: float) -> None:
        self.offset += max(0.0, sim_s - self.sim())

    @contextmanager
    def installed(self) -> Iterator[None]:
        """The portal's clocks read this one (django.utils.timezone.now, time.time, time.monotonic:
        looked up at call time by the portal's modules; threading and queue keep their own)."""
        from django.utils import timezone

        saved = timezone.now, time.time, time.monotonic
        timezone.now, time.time, time.monotonic = self.now, self.time, self.monotonic
        try:
            yield
        finally:
            timezone.now, time.time, time.monotonic = saved


# ---- the fake executor --------------------------------------------------------------------------


@dataclass
class SimTask:
    job_key: int
    attempt: int
    node: str  # the node's address (placement gave it; prepare_job keeps the node's address)
    gpus: tuple[int, ...]
    started: float
    ends: float  # when its work is done (sim seconds)
    save_done: float | None = None  # after SIGTERM: when its save completes
    exited: float | None = None
    exit_code: int = 0
    killed: bool = False  # stopped before it exited (its attempt's work since the start is lost)

    @property
    def live(self) -> bool:
        return self.exited is None

    def next_event(self) -> float:
        return min(self.ends, self.save_done) if self.save_done is not None else self.ends


@dataclass
class SimJob:
    trace: TraceJob
    submitted: float = 0.0
    remaining: float = 0.0  # work left (sim seconds)
    attempt: int = 0
    attempt_started: float | None = None
    idle_since: float = 0.0  # when it last began to wait (submit, or its attempt ended)
    waited: float = 0.0
    first_start: float | None = None
    starts: list[float] = field(default_factory=list)  # each attempt's start
    finished: float | None = None
    preemptions: int = 0
    lost_gpu_s: float = 0.0  # work lost: attempts killed after SIGTERM before their save was done
    terminated: bool = False  # its attempt had SIGTERM (a preemption)
    killed: bool = False  # a task of its attempt was killed before its save was done


class SimExecutor(InstantExecutor):
    """Tasks that run for their job's remaining work in simulated time. Thread-safe (the starting
    phase starts tasks on a pool). Checks, at each start, that none of the task's GPUs is held by a
    live task on its node."""

    def __init__(self, clock: SimClock, jobs: dict[int, SimJob], gpus_per_node: int) -> None:
        super().__init__()
        self.clock, self.jobs, self.gpus_per_node = clock, jobs, gpus_per_node
        self.tasks: dict[str, SimTask] = {}
        self.held: dict[str, dict[int, str]] = defaultdict(dict)  # node -> GPU -> task id (live tasks)
        self.over_allocations = 0
        self.lock = threading.Lock()

    def start(self, launch: Any) -> TaskHandle:
        now = self.clock.sim()
        task_id = f"sim-{launch.job_id}-{launch.job_attempt}-{launch.role}-{launch.index}-{launch.task_attempt}"
        with self.lock:
            job = self.jobs[launch.job_id]
            if launch.job_attempt != job.attempt:  # a new attempt: it waited since the last one ended
                job.attempt, job.attempt_started = launch.job_attempt, now
                job.waited += now - job.idle_since
                job.first_start = now if job.first_start is None else job.first_start
                job.starts.append(now)
            held = self.held[launch.ip]
            if any(gpu in held for gpu in launch.gpus) or len(held) + len(launch.gpus) > self.gpus_per_node:
                self.over_allocations += 1
            for gpu in launch.gpus:
                held[gpu] = task_id
            self.tasks[task_id] = SimTask(
                launch.job_id, launch.job_attempt, launch.ip, tuple(launch.gpus), now, now + job.remaining
            )
            self.started += 1
        return TaskHandle(executor_id=task_id, ip=launch.ip)

    def poll(self, handle: TaskHandle) -> TaskStatus:
        now = self.clock.sim()
        with self.lock:
            task = self.tasks.get(handle.executor_id)
            if task is None:
                return TaskStatus(running=False, exit_code=0)
            if task.live and now >= task.next_event():
                saved = task.save_done is not None and task.save_done <= task.ends
                self._exit(task, task.next_event(), SAVE_EXIT_CODE if saved else 0)
            if task.live:
                return TaskStatus(running=True)
            return TaskStatus(running=False, exit_code=task.exit_code)

    def terminate(self, handle: TaskHandle, grace_s: int) -> None:
        """SIGTERM: the task saves its progress, then exits (SAVE_EXIT_CODE)."""
        now = self.clock.sim()
        with self.lock:
            task = self.tasks.get(handle.executor_id)
            if task is None or not task.live or task.save_done is not None:
                return
            job = self.jobs[task.job_key]
            task.save_done, job.terminated = now + job.trace.save_s, True

    def stop(self, handle: TaskHandle, *, keep: bool = False) -> None:
        now = self.clock.sim()
        with self.lock:
            task = self.tasks.pop(handle.executor_id, None)
            if task is None:
                return
            if task.live:  # killed: a preempted one before its save was done loses its attempt's work
                task.killed = True
                self.jobs[task.job_key].killed |= task.save_done is not None
                self._exit(task, now, 137)
            self._attempt_ended(task)

    def _exit(self, task: SimTask, at: float, code: int) -> None:
        task.exited, task.exit_code = at, code
        held = self.held[task.node]
        for gpu in task.gpus:
            held.pop(gpu, None)

    def _attempt_ended(self, task: SimTask) -> None:
        """The job's attempt is over once its last task is removed: its work done, saved or lost."""
        job = self.jobs[task.job_key]
        if job.attempt != task.attempt or job.attempt_started is None:
            return
        if any(t.job_key == task.job_key and t.attempt == task.attempt for t in self.tasks.values()):
            return
        assert task.exited is not None
        if job.terminated:  # preempted: its work saved at SIGTERM, or lost when killed first
            job.preemptions += 1
            progress = task.save_done - job.trace.save_s - job.attempt_started if task.save_done else 0.0
            if job.killed:
                job.lost_gpu_s += (task.exited - job.attempt_started) * job.trace.total_gpus
            else:
                job.remaining = max(0.0, job.remaining - progress)
        else:  # done (or ended at its time limit)
            job.remaining, job.finished = 0.0, task.exited
        job.attempt_started, job.terminated, job.killed = None, False, False
        job.idle_since = task.exited

    def idle(self) -> bool:
        with self.lock:
            return not self.tasks

    def next_event(self) -> float | None:
        with self.lock:
            return min((t.next_event() for t in self.tasks.values() if t.live), default=None)

    def busy_gpus(self) -> int:
        with self.lock:
            return sum(len(held) for held in self.held.values())

    def gpus_by_vc(self) -> dict[str, int]:
        with self.lock:
            by_vc: dict[str, int] = defaultdict(int)
            for task in self.tasks.values():
                if task.live:
                    by_vc[self.jobs[task.job_key].trace.vc] += len(task.gpus)
            return by_vc


# ---- one policy's run ----------------------------------------------------------------------------


@dataclass
class Run:
    policy: str
    features: dict[str, bool | None]
    sim_hours: float
    wall_s: float
    utilisation_queued: float | None  # busy GPU-time / all GPU-time while any job waited
    # the same if every idle GPU inside a waiting job's own VC quota were used too (up to what the VC's
    # waiting jobs ask, packing aside): the most any queue order (backfill, best-effort) could reach
    # without more borrowing; the rest of the idle GPUs only borrowing could use
    utilisation_queued_bound: float | None
    utilisation_all: float
    waits_by_class: dict[str, tuple[float, float]]  # minutes p50, p95
    waits_by_vc: dict[str, tuple[float, float]]
    preemptions: int | None
    lost_gpu_hours: float | None
    # p50, p95, max of a preempting job's wait from the pass that began its preemptions to its start
    reclaim_s: tuple[float, float, float] | None
    # the reclaims past the grace + a tick + 1 s: (trace job id, class, VC, GPUs, seconds)
    reclaim_late: list[tuple[str, str, str, int, float]]
    pass_ms: tuple[float, float, float]  # p50, p95, max (the first, cold pass left out)
    # the same in CPU time of this process (what a shared box's load leaves comparable)
    pass_cpu_ms: tuple[float, float, float]
    passes: int
    jobs_ended: int
    jobs: int
    over_allocations: int
    quota_overruns: int  # moments a VC held more GPUs than its quota
    quota_overruns_allowed: bool  # (borrowing lends quota: then overruns are the point)
    reservations: int  # (job, attempt)s given a backfill reservation
    # jobs started later (by more than a tick) than the reservation in force when a job was backfilled
    # ahead of them, that reservation not re-planned since (Simulation._watch_placement)
    reservation_violations: int
    reservation_late_max_s: float  # the latest start against such a promise (negative: all early)
    reservations_replanned: int  # promises set aside: their job lost first place, or a job before it took its room
    held_late: int  # starts later than the reservation still held then + a tick, whatever the cause
    reservations_moved: int  # given again later than first given (its job lost first place, e.g. to prod)
    # withdrawn before their job started and not given again (it lost first place: a prod job came
    # first, it was preempted or reclaimed): no promise left to break
    reservations_withdrawn: int
    estimate_error: tuple[float, float] | None  # |first expected - actual| / wait, p50 and p90
    # the same for the estimate shown over the wait: each job's median of |shown - actual| weighed by
    # how long each estimate was shown, / its wait; p50 and p90
    estimate_error_over_wait: tuple[float, float] | None
    # what started each job that waited (Simulation._cause) -> (jobs, of them expected later than
    # they started, error p50, p90), error at submit / wait
    estimate_by_cause: dict[str, tuple[int, int, float, float]]
    # the jobs no job submitted after their estimate started ahead of (by the later of their start and their
    # expected start): what no estimate at submit can foresee left out -> (jobs, error p50, p90)
    estimate_undisturbed: tuple[int, float, float] | None
    estimate_jobs: list[dict[str, Any]]  # each job that waited: its error, cause and estimates shown
    estimated: int  # jobs that waited more than a tick with an expected start
    not_estimated: int  # and without one (unknown: behind a job without a time limit)


def build_cluster(trace: Trace, gpus: int, policy: Policy) -> tuple[dict[str, Any], dict[str, int]]:
    """Fake nodes of 8 GPUs, the trace's VCs with the policy's settings, its users: (users, quotas)."""
    from django.contrib.auth import get_user_model

    from clusters.models import Gpu, GpuType, Node, VirtualCluster

    vc_fields = {f.name for f in VirtualCluster._meta.get_fields()}
    settings = {name: value for name, value in policy.vc_settings.items() if name in vc_fields}
    VirtualCluster.objects.all().delete()
    for vc in trace.vcs:
        VirtualCluster.objects.create(name=vc.name, share_percent=vc.share, **settings)
    gpu_type, _ = GpuType.objects.get_or_create(name="sim")
    count = math.ceil(gpus / GPUS_PER_NODE)
    nodes = Node.objects.bulk_create(
        Node(name=f"sim-{i:04d}", address=f"10.{i // 62500}.{i // 250 % 250}.{i % 250 + 1}", cpus=64, memory_mb=1 << 19)
        for i in range(count)
    )
    Gpu.objects.bulk_create(Gpu(node=node, index=g, gpu_type=gpu_type) for node in nodes for g in range(GPUS_PER_NODE))
    model = get_user_model()
    users = {name: model.objects.create_user(name) for name in sorted({job.user for job in trace.jobs})}
    from scheduling import quota

    quotas = quota.vc_quotas(list(Node.objects.all()), quota.node_gpus())  # (the portal's own rule)
    return users, {name: limit.gpu for name, limit in quotas.items()}


def job_text(job: TraceJob, policy: Policy) -> str:
    body = spec(job.id, job.tasks, job.gpus, job.vc)
    body["taskRoles"]["worker"]["resourcePerInstance"].update(cpu=job.gpus, memoryMB=job.gpus * 8192)
    extras: dict[str, Any] = {}
    if job.limit_min:
        extras["maxRunTimeMinutes"] = job.limit_min
    if policy.job_classes:
        extras["hivedScheduler"] = {"jobPriorityClass": job.job_class}
    body["extras"] = extras
    return json.dumps(body)


class Simulation:
    def __init__(
        self, trace: Trace, policy: Policy, gpus: int, tick_s: float, progress: bool = False, oracle: bool = False
    ) -> None:
        self.trace, self.policy, self.gpus, self.tick_s = trace, policy, gpus, tick_s
        self.oracle = oracle  # expected starts from the real run times (_oracle)
        self.progress = progress  # a line on stderr every PROGRESS_S of wall time
        self.clock = SimClock()
        self.jobs: dict[int, SimJob] = {}
        self.executor = SimExecutor(self.clock, self.jobs, GPUS_PER_NODE)
        self.pass_times: list[float] = []
        self.pass_cpu: list[float] = []  # (process CPU time of each pass: its threads' too)
        self.busy_gpu_s = self.all_gpu_s = self.queued_busy_s = self.queued_all_s = 0.0
        self.queued_own_room_s = 0.0  # GPU-time idle inside a waiting job's own VC quota, while jobs waited
        self.own_room = 0  # such idle GPUs, as the last pass left them (Simulation._watch)
        self.quota_overruns = 0
        # a job that preempts -> when each of its preemptions began (the pass after which its victim
        # was first seen preempted by it)
        self.preempting_since: dict[int, list[float]] = defaultdict(list)
        self.victims_seen: set[tuple[int, int, int]] = set()  # (victim, its attempt, preemptor)
        # (job, its starts so far) -> the (first, last) reserved start it was given while waiting, sim s
        self.reserved: dict[tuple[int, int], tuple[float, float]] = {}
        self.withdrawn: set[tuple[int, int]] = set()  # of them, those no pass has held since
        # (job, its starts so far) -> the first expected start it was given while waiting (sim s)
        self.estimates: dict[tuple[int, int], float] = {}
        # (job, its starts so far) -> every expected start it was shown while waiting, as it changed:
        # (sim s when a pass showed it, the expected start in sim s)
        self.shown: dict[tuple[int, int], list[tuple[float, float]]] = defaultdict(list)
        # job -> how each placement that started it did: "borrowed", "backfilled" or "own" (its attempts in order)
        self.started_how: dict[int, list[str]] = defaultdict(list)
        # (job, its starts so far) -> the reserved start in force when a job was last backfilled ahead of
        # it (backfill's promise: that job does not delay it), until a re-plan sets it aside (sim s)
        self.promised: dict[tuple[int, int], float] = {}
        self.replanned = 0
        self.placements: list[tuple[list[Any], Any]] = []  # (the jobs asked, the result) of each placement

    def run(self) -> Run:
        from django.test import override_settings

        from jobs.models import Job, JobState
        from scheduling import executors, launch
        from scheduling.scheduler import Scheduler

        began = time.perf_counter()
        users, quotas = build_cluster(self.trace, self.gpus, self.policy)
        self.gpus = math.ceil(self.gpus / GPUS_PER_NODE) * GPUS_PER_NODE
        from scheduling import placing

        saved = executors.node_executor, launch.storage.launch_mounts
        executors.node_executor = lambda node: self.executor
        launch.storage.launch_mounts = lambda *args, **kwargs: []  # (no user areas: no files written)
        place = placing.place

        def watched(nodes: Any, vcs: Any, jobs: Any, plan: Any = None) -> Any:
            result = place(nodes, vcs, jobs, plan)
            self.placements.append((jobs, result))
            return result

        placing.place = watched  # (each placement's result read after its pass: what backfill promised)
        undo = self._oracle() if self.oracle else (lambda: None)
        try:
            scheduler = Scheduler(holder=f"sim-{self.policy.name}")
            with self.clock.installed(), override_settings(**self.policy.settings):
                try:
                    self._loop(users, quotas, scheduler)
                finally:
                    scheduler.release_lease()
        finally:
            executors.node_executor, launch.storage.launch_mounts = saved
            placing.place = place
            undo()
        ended = Job.objects.filter(state__in=[JobState.SUCCEEDED, JobState.FAILED, JobState.STOPPED]).count()
        return self._result(ended, time.perf_counter() - began)

    def _oracle(self) -> Any:
        """Run times known (`--run-times oracle`): every running job is expected to end when its tasks
        really do (a preempted one when its save is done), every waiting job to run its real remaining
        work, and a job whose preemptions began to start when its victims really end, so that what is
        left of the expected starts' error is the plan's own. Returns what undoes it."""
        from dataclasses import replace

        from clusters.models import Node
        from scheduling import placing, sharing

        address = dict(Node.objects.values_list("name", "address"))
        plan, request = sharing.backfill_plan, placing.Placer._job_request
        origin = self.clock.origin

        def true_end(ending: Any) -> float | None:
            with self.executor.lock:
                for freed in ending.freed:
                    for index, _ in freed.gpus:
                        task_id = self.executor.held[address.get(freed.node, "")].get(index)
                        if task_id is not None and (task := self.executor.tasks.get(task_id)) is not None:
                            return origin + task.next_event()
            return None

        def known_plan(*args: Any, **kwargs: Any) -> Any:
            found = plan(*args, **kwargs)
            found.ending = [
                ending if (end := true_end(ending)) is None else replace(ending, expected_at=end)
                for ending in found.ending
            ]
            return found

        def known_request(placer: Any, job: Any, *args: Any, **kwargs: Any) -> Any:
            made = request(placer, job, *args, **kwargs)
            if (simulated := self.jobs.get(job.pk)) is not None:
                made.expected_s = simulated.remaining
            return made

        def known_preemptions(keys: set[int], *args: Any, **kwargs: Any) -> dict[int, float]:
            """A job whose preemptions began is expected when its victims really end (their save done)."""
            from jobs.models import Job

            found = preemptions(keys, *args, **kwargs)
            victims = Job.objects.filter(ending_by__in=keys).values_list("ending_by", "pk")
            real: dict[int, float] = {}
            with self.executor.lock:
                for key, victim in victims:
                    ends = [t.exited or t.next_event() for t in self.executor.tasks.values() if t.job_key == victim]
                    if key is not None and ends:
                        real[key] = max(real.get(key, 0.0), origin + max(ends))
            return {**found, **real}

        preemptions = sharing.preemption_starts
        sharing.backfill_plan, placing.Placer._job_request = known_plan, known_request  # type: ignore[method-assign,assignment]
        sharing.preemption_starts = known_preemptions

        def undo() -> None:
            sharing.backfill_plan, placing.Placer._job_request = plan, request  # type: ignore[method-assign]
            sharing.preemption_starts = preemptions

        return undo

    def _loop(self, users: dict[str, Any], quotas: dict[str, int], scheduler: Any) -> None:
        from jobs.actions import submit_job
        from jobs.models import Job, JobState

        arrivals = list(self.trace.jobs)
        arrival_times = [job.arrival_s for job in arrivals]
        submitted = 0
        waiting = 0
        last = 0.0
        horizon = (arrival_times[-1] if arrivals else 0) + 30 * 86400  # gives up past this (reported)
        said = time.perf_counter()
        while True:
            if self.progress and time.perf_counter() - said > PROGRESS_S:
                said = time.perf_counter()
                done = sum(job.finished is not None for job in self.jobs.values())
                print(
                    f"  {self.policy.name}: simulated {self.clock.sim() / 3600:.1f} h, {submitted} jobs submitted, "
                    f"{done} done, {len(self.pass_times)} passes",
                    file=sys.stderr,
                )
            now = self.clock.sim()
            self._account(last, now, waiting)
            last = now
            while submitted < len(arrivals) and arrivals[submitted].arrival_s <= now:
                job = arrivals[submitted]
                row = submit_job(users[job.user], job_text(job, self.policy))
                self.jobs[row.pk] = SimJob(job, submitted=now, remaining=job.duration_s, idle_since=now)
                submitted += 1
            before, cpu_before = time.perf_counter(), time.process_time()
            busy = scheduler.run_once()
            self.pass_times.append(time.perf_counter() - before)
            self.pass_cpu.append(time.process_time() - cpu_before)
            waiting = Job.objects.filter(state=JobState.WAITING).count()
            self._watch(quotas)
            if busy:
                continue
            final = [JobState.SUCCEEDED, JobState.FAILED]
            if (
                submitted == len(arrivals)
                and self.executor.idle()
                and not Job.objects.exclude(state__in=final).exists()
            ):
                break
            upcoming = [arrival_times[submitted]] if submitted < len(arrivals) else []
            upcoming += [t for t in (self.executor.next_event(), self._next_deadline()) if t is not None]
            target = max(min(upcoming, default=now + self.tick_s), now + self.tick_s)
            if target > horizon:
                break
            self._idle_heartbeats(scheduler, target)
            self.clock.advance_to(target)

    def _idle_heartbeats(self, scheduler: Any, target: float) -> None:
        """The node heartbeats of the idle passes a jump skips, run untimed: between two events the
        scheduler's idle passes ping the nodes as they fall due (a tenth of the period's each round);
        a jump would leave every node due to the next timed pass (250 pings at 2,000 GPUs), which a
        real pass never makes. The last round before `target` is left to the pass."""
        from django.conf import settings

        from scheduling.nodes import ROUNDS

        self.clock.advance_to(target - 1.01 * settings.PAI_NODE_HEARTBEAT_SECONDS / ROUNDS)
        scheduler.heartbeat.check(scheduler.backends)

    def _account(self, last: float, now: float, waiting: int) -> None:
        """GPU-time between the last pass and this one (busy as the last pass left it)."""
        span = now - last
        busy = self.executor.busy_gpus()
        self.busy_gpu_s += busy * span
        self.all_gpu_s += self.gpus * span
        if waiting:
            self.queued_busy_s += busy * span
            self.queued_all_s += self.gpus * span
            self.queued_own_room_s += min(self.own_room, self.gpus - busy) * span

    def _watch(self, quotas: dict[str, int]) -> None:
        """After each pass: quota overruns, the reservations and expected starts it gave, and which
        waiting jobs are preempting which."""
        by_vc = self.executor.gpus_by_vc()
        for vc, held in by_vc.items():
            if held > quotas[vc]:
                self.quota_overruns += 1
        self.own_room = self._own_room(quotas, by_vc)
        self._watch_plans()
        for jobs, result in self.placements:
            self._watch_placement(jobs, result)
        self.placements.clear()
        if self.features.get("preemption"):
            from jobs.models import Job

            now = self.clock.sim()
            by = "ending_by" if hasattr(Job, "ending_by") else "preempted_by"  # (its name before issue 45)
            victims = Job.objects.filter(**{f"{by}__isnull": False}).values_list("pk", "job_attempt", f"{by}_id")
            for victim in victims:
                if victim not in self.victims_seen:
                    self.victims_seen.add(victim)
                    self.preempting_since[victim[2]].append(now)

    def _own_room(self, quotas: dict[str, int], by_vc: dict[str, int]) -> int:
        """Idle GPUs a queue order alone could give the waiting jobs: each VC's quota left, up to what
        its waiting jobs ask (packing aside)."""
        from jobs.models import Job, JobState

        asked: dict[str, int] = defaultdict(int)
        for pk in Job.objects.filter(state=JobState.WAITING).values_list("pk", flat=True):
            if (job := self.jobs.get(pk)) is not None:
                asked[job.trace.vc] += job.trace.total_gpus
        return sum(min(max(0, quotas[vc] - by_vc.get(vc, 0)), gpus) for vc, gpus in asked.items())

    def _watch_plans(self) -> None:
        from jobs.models import Job, JobState
        from scheduling.models import VcQueue

        origin = self.clock.origin
        held = set()
        for stored in VcQueue.objects.filter(reservation__isnull=False).values_list("reservation", flat=True):
            if stored and (job := self.jobs.get(stored["job"])) is not None:
                key = (stored["job"], len(job.starts))
                start = stored["start"] - origin
                self.reserved[key] = (self.reserved.get(key, (start, start))[0], start)
                held.add(key)
        # (a reservation gone while its job still waits was withdrawn; one used by a start is not)
        self.withdrawn -= held
        self.withdrawn |= {key for key in self.reserved.keys() - held if len(self.jobs[key[0]].starts) == key[1]}
        estimated = Job.objects.filter(state=JobState.WAITING, expected_start_at__isnull=False)
        for pk, at in estimated.values_list("pk", "expected_start_at"):
            if at is not None and (job := self.jobs.get(pk)) is not None:
                key, expected = (pk, len(job.starts)), at.timestamp() - origin
                self.estimates.setdefault(key, expected)
                shown = self.shown[key]
                if not shown or shown[-1][1] != expected:
                    shown.append((self.clock.sim(), expected))

    def _watch_placement(self, jobs: list[Any], result: Any) -> None:
        """Backfill's promises: each job backfilled ahead of a VC's first job promises it its reserved
        start in force then. A promise is set aside (a re-plan, not a broken one) when its job is no
        longer first (withdrawn: a higher class came first, it was preempted or reclaimed), or when its
        reservation moved later in a placement that started a job taken before it in the queue (a
        higher class, a requeued or preempting job) of its VC or on its reserved nodes; a move with no
        such cause keeps the promise (its job's start is judged against it)."""
        from clusters.placement import queue_order

        origin = self.clock.origin
        for key in result.placed:
            how = "borrowed" if key in result.borrowed else "backfilled" if key in result.backfilled else "own"
            self.started_how[key].append(how)
        order = {job.key: queue_order(job) for job in jobs}
        vc_of = {job.key: job.vc for job in jobs}
        held = {reservation.job: reservation for reservation in result.reservations.values()}
        nodes_of = {key: {task.node for task in tasks} for key, tasks in result.placed.items()}
        taken_first = [key for key in result.placed if key not in result.backfilled]
        for (key, attempt), promised in list(self.promised.items()):
            if len(self.jobs[key].starts) != attempt or key in result.placed or key not in order:
                continue  # (started, or starting now: judged by its start)
            now = held.get(key)
            if now is None:
                replanned = True
            elif now.start - origin > promised + self.tick_s:
                replanned = any(
                    order[other] < order[key] and (vc_of[other] == vc_of[key] or nodes_of[other] & set(now.nodes))
                    for other in taken_first
                    if other in order
                )
            else:
                replanned = False
            if replanned:
                del self.promised[(key, attempt)]
                self.replanned += 1
        for started in result.backfilled.values():
            if (job := self.jobs.get(started.ahead_of)) is not None:
                self.promised[(started.ahead_of, len(job.starts))] = started.start - origin

    def _plans_kept(self) -> dict[str, Any]:
        """Reservations given and kept (a start later than the reservation still held then, by more
        than the simulation's step, is a violation; one withdrawn before the start is counted apart;
        a reservation given again later, a move), and the first expected start's error against the
        wait: |expected - actual| / wait."""
        held_late, moved = [], 0
        for (key, attempt), (first, last) in self.reserved.items():
            starts = self.jobs[key].starts
            if attempt < len(starts) and (key, attempt) not in self.withdrawn:
                held_late.append(starts[attempt] - last)
            moved += last > first + self.tick_s
        late = [
            self.jobs[key].starts[attempt] - promised
            for (key, attempt), promised in self.promised.items()
            if attempt < len(self.jobs[key].starts)
        ]
        errors, over_wait, unknown, undisturbed = [], [], 0, []
        first_starts = [(job.submitted, job.starts[0]) for job in self.jobs.values() if job.starts]
        records: list[dict[str, Any]] = []
        by_cause: dict[str, list[float]] = defaultdict(list)
        early: dict[str, int] = defaultdict(int)
        for job_key, job in self.jobs.items():
            if not job.starts or job.starts[0] - job.submitted <= self.tick_s:
                continue  # (it did not wait: nothing was estimated for long)
            start, wait = job.starts[0], job.starts[0] - job.submitted
            expected = self.estimates.get((job_key, 0))
            if expected is None:
                unknown += 1
                continue
            error = abs(expected - start) / wait
            errors.append(error)
            over_wait.append(_median_over_wait(self.shown[(job_key, 0)], start) / wait)
            cause = self._cause(job_key, job)
            by_cause[cause].append(error)
            given, until = self.shown[(job_key, 0)][0][0], max(start, expected) + self.tick_s
            disturbed = any(given < submitted and begun <= until for submitted, begun in first_starts)
            if not disturbed:
                undisturbed.append(error)
            early[cause] += expected > start
            records.append(
                {
                    "job": job.trace.id,
                    "class": job.trace.job_class,
                    "vc": job.trace.vc,
                    "gpus": job.trace.total_gpus,
                    "wait_s": round(wait, 1),
                    "expected_s": round(expected - job.submitted, 1),
                    "error": round(error, 3),
                    "error_over_wait": round(over_wait[-1], 3),
                    "cause": cause,
                    "disturbed": disturbed,
                    "shown": [
                        (round(at - job.submitted, 1), round(shown - job.submitted, 1))
                        for at, shown in self.shown[(job_key, 0)]
                    ],
                }
            )
        errors.sort()
        over_wait.sort()
        undisturbed.sort()
        return {
            "reservations": len(self.reserved),
            "reservation_violations": sum(lateness > self.tick_s for lateness in late),
            "reservation_late_max_s": max(late, default=0.0),
            "reservations_replanned": self.replanned,
            "held_late": sum(lateness > self.tick_s for lateness in held_late),
            "reservations_moved": moved,
            "reservations_withdrawn": len(self.withdrawn),
            "estimate_error": (_pct(errors, 50), _pct(errors, 90)) if errors else None,
            "estimate_error_over_wait": (_pct(over_wait, 50), _pct(over_wait, 90)) if over_wait else None,
            "estimate_by_cause": {
                cause: (len(found), early[cause], _pct(sorted(found), 50), _pct(sorted(found), 90))
                for cause, found in sorted(by_cause.items())
            },
            "estimate_jobs": records,
            "estimate_undisturbed": _counted(undisturbed),
            "estimated": len(errors),
            "not_estimated": unknown,
        }

    def _cause(self, key: int, job: SimJob) -> str:
        """What started a job's first attempt that the plan may not play: it preempted others for
        its room, it ran on borrowed quota, backfill started it ahead of its VC's first job; else
        "queue" (its turn in the queue came, sooner or later than planned)."""
        if any(since <= job.starts[0] for since in self.preempting_since.get(key, ())):
            return "preempting"
        how = self.started_how.get(key, [])
        return {"borrowed": "borrowed", "backfilled": "backfilled"}.get(how[0] if how else "", "queue")

    def _next_deadline(self) -> float | None:
        """The next grace deadline (a preempted job's tasks are killed then), sim seconds."""
        if not self.features.get("preemption"):
            return None
        from django.db.models import Min

        from jobs.models import Job, JobState

        column = "ending_deadline" if hasattr(Job, "ending_deadline") else "stop_deadline"  # (before issue 45)
        deadline = Job.objects.filter(state=JobState.RUNNING).aggregate(first=Min(column))["first"]
        return deadline.timestamp() - self.clock.origin if deadline is not None else None

    @property
    def grace_s(self) -> float:
        from django.conf import settings

        return float(getattr(settings, "PAI_GRACE_SECONDS", 0))

    @property
    def features(self) -> dict[str, bool | None]:
        if not hasattr(self, "_features"):
            self._features = features(self.policy)
        return self._features

    def _result(self, ended: int, wall_s: float) -> Run:
        jobs = list(self.jobs.values())
        preemption = in_build()["preemption"]
        warm = sorted(self.pass_times[1:]) or self.pass_times
        cpu = sorted(self.pass_cpu[1:]) or self.pass_cpu
        waits = {key: self._reclaim(key, since) for key, since in self.preempting_since.items()}
        reclaim = sorted(wait for wait in waits.values() if wait is not None)
        bound = self.grace_s + self.tick_s + 1
        late = [
            (job.id, job.job_class, job.vc, job.total_gpus, wait)
            for key, wait in waits.items()
            if wait is not None and wait > bound
            for job in [self.jobs[key].trace]
        ]
        return Run(
            policy=self.policy.name,
            features=self.features,
            sim_hours=self.clock.sim() / 3600,
            wall_s=wall_s,
            utilisation_queued=self.queued_busy_s / self.queued_all_s if self.queued_all_s else None,
            utilisation_queued_bound=(
                (self.queued_busy_s + self.queued_own_room_s) / self.queued_all_s if self.queued_all_s else None
            ),
            utilisation_all=self.busy_gpu_s / self.all_gpu_s if self.all_gpu_s else 0.0,
            waits_by_class=_waits(jobs, lambda job: job.trace.job_class),
            waits_by_vc=_waits(jobs, lambda job: job.trace.vc),
            preemptions=sum(job.preemptions for job in jobs) if preemption else None,
            lost_gpu_hours=sum(job.lost_gpu_s for job in jobs) / 3600 if preemption else None,
            reclaim_s=(_pct(reclaim, 50), _pct(reclaim, 95), reclaim[-1]) if reclaim else None,
            reclaim_late=late,
            pass_ms=(1000 * _pct(warm, 50), 1000 * _pct(warm, 95), 1000 * warm[-1]),
            pass_cpu_ms=(1000 * _pct(cpu, 50), 1000 * _pct(cpu, 95), 1000 * cpu[-1]),
            passes=len(self.pass_times),
            jobs_ended=ended,
            jobs=len(self.trace.jobs),
            over_allocations=self.executor.over_allocations,
            quota_overruns=self.quota_overruns,
            quota_overruns_allowed=bool(self.features.get("borrowing")),
            **self._plans_kept(),
        )

    def _reclaim(self, key: int, since: list[float]) -> float | None:
        """From the last preemption a job began before it started to its start (None: it never
        started after one). A job whose freed room a higher one took preempts again: the last one
        counts (the earlier ones show in its class's waits)."""
        job = self.jobs.get(key)
        start = min((start for start in job.starts if start >= since[0]), default=None) if job else None
        if start is None:
            return None
        return start - max(begun for begun in since if begun <= start)


def _median_over_wait(shown: list[tuple[float, float]], start: float) -> float:
    """The median, over the time a job waited with an expected start, of |that estimate - its start|:
    each estimate weighed by how long it was shown (from the pass that showed it to the next change,
    the last one until the start)."""
    spans = []
    for index, (at, expected) in enumerate(shown):
        until = shown[index + 1][0] if index + 1 < len(shown) else start
        spans.append((abs(expected - start), max(0.0, until - at)))
    total = sum(length for _, length in spans)
    if not total:
        return spans[0][0] if spans else 0.0
    seen = 0.0
    for error, length in sorted(spans):
        seen += length
        if seen >= total / 2:
            return error
    return spans[-1][0]


def _counted(errors: list[float]) -> tuple[int, float, float] | None:
    """(how many, p50, p90) of sorted errors; None for none."""
    return (len(errors), _pct(errors, 50), _pct(errors, 90)) if errors else None


def _pct(values: list[float], percent: float) -> float:
    """The nearest-rank percentile of sorted values."""
    return values[max(0, math.ceil(percent / 100 * len(values)) - 1)]


def _waits(jobs: list[SimJob], key: Any) -> dict[str, tuple[float, float]]:
    groups: dict[str, list[float]] = defaultdict(list)
    for job in jobs:
        groups[key(job)].append(job.waited / 60)
    return {name: (_pct(sorted(v), 50), _pct(sorted(v), 95)) for name, v in sorted(groups.items())}


def reset_database() -> None:
    """Nothing of a previous policy's run left: jobs, nodes, VCs, the simulation's users."""
    from django.contrib.auth import get_user_model

    from clusters.models import GpuType, Node, SchedulerLease, VirtualCluster
    from jobs.models import Job
    from scheduling.models import VcQueue

    Job.objects.all().delete()
    Node.objects.all().delete()
    GpuType.objects.filter(name="sim").delete()
    VcQueue.objects.all().delete()
    SchedulerLease.objects.all().delete()
    VirtualCluster.objects.all().delete()
    get_user_model().objects.filter(username__startswith="vc-").delete()


def simulate(
    trace: Trace,
    policies: list[Policy],
    gpus: int,
    tick_s: float = DEFAULT_TICK_S,
    progress: bool = False,
    oracle: bool = False,
    processes: int = 1,
) -> list[Run]:
    """Each policy's run, in this process one after the other, or (`processes` > 1, SQLite) side by
    side in processes forked from this one, each on a copy of its database as migrated (migrations
    run once)."""
    if processes > 1 and len(policies) > 1 and _sqlite_file() is not None:
        return _simulate_apart(trace, policies, gpus, tick_s, progress, oracle, processes)
    runs = []
    for policy in policies:
        reset_database()
        runs.append(Simulation(trace, policy, gpus, tick_s, progress, oracle).run())
    return runs


def _sqlite_file() -> Path | None:
    from django.db import connection

    return Path(connection.settings_dict["NAME"]) if connection.vendor == "sqlite" else None


def _simulate_apart(
    trace: Trace, policies: list[Policy], gpus: int, tick_s: float, progress: bool, oracle: bool, processes: int
) -> list[Run]:
    import multiprocessing

    from django.db import connections

    template = _sqlite_file()
    assert template is not None
    reset_database()
    connections.close_all()  # (each child opens its own, on its own copy)
    jobs = [(trace, policy, gpus, tick_s, progress, oracle, str(template)) for policy in policies]
    with multiprocessing.get_context("fork").Pool(min(processes, len(policies)), maxtasksperchild=1) as pool:
        return pool.starmap(_run_apart, jobs, chunksize=1)


def _run_apart(
    trace: Trace, policy: Policy, gpus: int, tick_s: float, progress: bool, oracle: bool, template: str
) -> Run:
    """One policy's run in a forked process, on a copy of the migrated database of its own."""
    import sqlite3
    from contextlib import closing

    from django.db import connection, connections

    own = Path(template).with_name(f"sharing-{policy.name}.sqlite3")
    with closing(sqlite3.connect(template)) as source, closing(sqlite3.connect(own)) as copy:
        source.backup(copy)  # (its write-ahead log included)
    connections.close_all()
    connection.settings_dict["NAME"] = str(own)
    return Simulation(trace, policy, gpus, tick_s, progress, oracle).run()


# ---- the table ----------------------------------------------------------------------------------


def _fmt_pair(pair: tuple[float, float] | None) -> str:
    return "n/a" if pair is None else f"{pair[0]:.0f} / {pair[1]:.0f}"


def rows(runs: list[Run]) -> list[tuple[str, list[str]]]:
    """The table's rows: (measure, one cell per policy)."""

    def cells(value: Any) -> list[str]:
        return [value(run) for run in runs]

    def feature_text(run: Run) -> str:
        return (
            ", ".join(name if used else f"{name}: n/a" for name, used in run.features.items() if used or used is None)
            or "none"
        )

    table: list[tuple[str, list[str]]] = [
        ("sharing features", cells(feature_text)),
        (
            "GPU utilisation while jobs wait",
            cells(lambda r: "n/a" if r.utilisation_queued is None else f"{100 * r.utilisation_queued:.1f} %"),
        ),
        (
            "the same at most, by queue order alone",
            cells(
                lambda r: "n/a" if r.utilisation_queued_bound is None else f"{100 * r.utilisation_queued_bound:.1f} %"
            ),
        ),
        ("GPU utilisation, whole run", cells(lambda r: f"{100 * r.utilisation_all:.1f} %")),
        ("simulated time", cells(lambda r: f"{r.sim_hours:.1f} h")),
    ]
    classes = sorted({name for run in runs for name in run.waits_by_class}, key=list(CLASSES).index)
    for name in classes:
        table.append((f"wait p50 / p95, {name} (min)", cells(lambda r, n=name: _fmt_pair(r.waits_by_class.get(n)))))
    for name in sorted({name for run in runs for name in run.waits_by_vc}):
        table.append((f"wait p50 / p95, {name} (min)", cells(lambda r, n=name: _fmt_pair(r.waits_by_vc.get(n)))))
    table += [
        ("preemptions", cells(lambda r: "n/a" if r.preemptions is None else str(r.preemptions))),
        (
            "work lost past the grace (GPU-h)",
            cells(lambda r: "n/a" if r.lost_gpu_hours is None else f"{r.lost_gpu_hours:.1f}"),
        ),
        (
            "reclaim: preemption begun -> started, p50 / p95 / max (s)",
            cells(lambda r: "n/a" if r.reclaim_s is None else " / ".join(f"{v:.0f}" for v in r.reclaim_s)),
        ),
        (
            "reclaims over the grace + a tick",
            cells(lambda r: "n/a" if r.reclaim_s is None else str(len(r.reclaim_late))),
        ),
        (
            "reservations given; moved later; withdrawn",
            cells(lambda r: f"{r.reservations}; {r.reservations_moved}; {r.reservations_withdrawn}"),
        ),
        (
            "starts later than backfill's promise; latest (s)",
            cells(lambda r: f"{r.reservation_violations}; {r.reservation_late_max_s:+.0f}" if r.reservations else "0"),
        ),
        (
            "promises re-planned; starts later than the reservation held",
            cells(lambda r: f"{r.reservations_replanned}; {r.held_late}"),
        ),
        (
            "expected start error / wait, p50 / p90",
            cells(
                lambda r: (
                    "n/a"
                    if r.estimate_error is None
                    else f"{100 * r.estimate_error[0]:.0f} % / {100 * r.estimate_error[1]:.0f} %"
                )
            ),
        ),
        (
            "the same, each job's median over its wait",
            cells(
                lambda r: (
                    "n/a"
                    if r.estimate_error_over_wait is None
                    else f"{100 * r.estimate_error_over_wait[0]:.0f} % / {100 * r.estimate_error_over_wait[1]:.0f} %"
                )
            ),
        ),
    ]
    for cause in CAUSES:
        table.append(
            (
                f"  at submit, jobs {CAUSES[cause]}: n (early); p50 / p90",
                cells(lambda r, c=cause: _cause_cell(r.estimate_by_cause.get(c))),
            )
        )
    table.append(
        (
            "  at submit, jobs no later-submitted job started ahead of: n; p50 / p90",
            cells(lambda r: "0" if r.estimate_undisturbed is None else _undisturbed_cell(r.estimate_undisturbed)),
        )
    )
    table += [
        ("waited with / without an expected start", cells(lambda r: f"{r.estimated} / {r.not_estimated}")),
        ("scheduler pass p50 / p95 / max (ms)", cells(lambda r: " / ".join(f"{v:.0f}" for v in r.pass_ms))),
        ("the same, CPU time (ms)", cells(lambda r: " / ".join(f"{v:.0f}" for v in r.pass_cpu_ms))),
        ("passes", cells(lambda r: str(r.passes))),
        ("jobs ended", cells(lambda r: f"{r.jobs_ended} of {r.jobs}")),
        ("GPUs given twice", cells(lambda r: str(r.over_allocations))),
        (
            "moments a VC held over its quota",
            cells(lambda r: f"{r.quota_overruns}" + (" (borrowing)" if r.quota_overruns_allowed else "")),
        ),
        ("wall time of the run", cells(lambda r: f"{r.wall_s:.0f} s")),
    ]
    return table


# What started a job that waited (Simulation._cause), as the table names it
CAUSES = {
    "preempting": "that preempted",
    "borrowed": "that borrowed",
    "backfilled": "backfilled",
    "queue": "whose turn came",
}


def _cause_cell(found: tuple[int, int, float, float] | None) -> str:
    if found is None:
        return "0"
    count, early, p50, p90 = found
    return f"{count} ({early}); {100 * p50:.0f} % / {100 * p90:.0f} %"


def _undisturbed_cell(found: tuple[int, float, float]) -> str:
    count, p50, p90 = found
    return f"{count}; {100 * p50:.0f} % / {100 * p90:.0f} %"


def print_table(runs: list[Run], header: str) -> None:
    table = rows(runs)
    width = max(len(name) for name, _ in table)
    widths = [max(len(run.policy), *(len(cells[i]) for _, cells in table)) for i, run in enumerate(runs)]
    print(header)
    print(f"{'measure':<{width}}  " + "  ".join(f"{run.policy:>{w}}" for run, w in zip(runs, widths, strict=True)))
    for name, cells in table:
        print(f"{name:<{width}}  " + "  ".join(f"{cell:>{w}}" for cell, w in zip(cells, widths, strict=True)))


def describe(trace: Trace, gpus: int, seed: int | None) -> str:
    nodes = math.ceil(gpus / GPUS_PER_NODE)
    shares = ", ".join(f"{vc.name} {vc.share:g} %" for vc in trace.vcs)
    where = f"seed {seed}" if seed is not None else "recorded trace"
    counts: dict[str, int] = defaultdict(int)
    for job in trace.jobs:
        counts[job.job_class] += 1
    mix = ", ".join(f"{counts[name]} {name}" for name in CLASSES if counts[name])
    span = (trace.jobs[-1].arrival_s / 3600) if trace.jobs else 0
    return (
        f"{nodes * GPUS_PER_NODE} GPUs ({nodes} fake nodes x {GPUS_PER_NODE}); VCs {shares}; "
        f"{len(trace.jobs)} jobs ({mix}; {where}) arriving over {span:.1f} h"
    )


def main(argv: list[str] | None = None) -> list[Run]:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--gpus", type=int, default=2000)
    parser.add_argument("--jobs", type=int, default=DEFAULT_JOBS, help="jobs of the generated trace")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument(
        "--limit-asked",
        default=",".join(map(str, LIMIT_ASKED)),
        help="the range of limit / real run time the generated jobs ask (1,1: each runs to its limit)",
    )
    parser.add_argument("--trace", type=Path, help="a recorded trace (JSON lines) instead of a generated one")
    parser.add_argument("--write-trace", type=Path, help="save the trace run (JSON lines)")
    parser.add_argument("--policies", default=",".join(POLICIES), help=f"of {', '.join(POLICIES)}")
    parser.add_argument("--tick", type=float, default=DEFAULT_TICK_S, help="least simulated seconds between passes")
    parser.add_argument(
        "--run-times",
        choices=("history", "oracle"),
        default="history",
        help="expected starts from recent jobs' run times (the portal's), or from the real ones (the plan's own error)",
    )
    parser.add_argument(
        "--processes",
        type=int,
        default=1,
        help="run the policies side by side in this many processes (each on a copy of the migrated database)",
    )
    parser.add_argument("--json", type=Path, help="write the results as JSON")
    parser.add_argument("--no-setup", action="store_true", help=argparse.SUPPRESS)  # (a test's own database)
    args = parser.parse_args(argv)
    unknown = [name for name in args.policies.split(",") if name not in POLICIES]
    if unknown:
        parser.error(f"--policies: unknown {', '.join(unknown)} (known: {', '.join(POLICIES)})")
    if args.gpus < 1:
        parser.error("--gpus: at least 1")
    began = time.perf_counter()
    low, high = (float(part) for part in args.limit_asked.split(","))
    trace = Trace.load(args.trace) if args.trace else generate(args.gpus, args.jobs, args.seed, (low, high))
    if args.write_trace:
        trace.dump(args.write_trace)
    if not args.no_setup:
        from bench.throughput import setup_django

        setup_django()
    policies = [POLICIES[name] for name in args.policies.split(",")]
    oracle = args.run_times == "oracle"
    runs = simulate(trace, policies, args.gpus, args.tick, progress=True, oracle=oracle, processes=args.processes)
    header = describe(trace, args.gpus, None if args.trace else args.seed)
    print_table(runs, header + ("; run times known (oracle)" if oracle else ""))
    print(f"(took {time.perf_counter() - began:.0f} s; passes at least {args.tick:g} simulated s apart when idle)")
    if args.json:
        args.json.write_text(json.dumps([asdict(run) for run in runs], indent=1))
    return runs


if __name__ == "__main__":
    main()
