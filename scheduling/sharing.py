"""Sharing a VC, the database's side (the decisions are clusters.sharing's and placement's): each
user's recent usage in the fair-share VCs, read from the task attempts already kept, and each VC's
queue as the last placement left it (positions and the first job's reservation,
scheduling.models.VcQueue), and each waiting job's expected start (Job.expected_start_at).
"""

from __future__ import annotations

import bisect
import statistics
import time
from collections.abc import Iterable
from datetime import UTC, datetime, timedelta
from typing import Any, NamedTuple

from django.conf import settings
from django.db.models import Max, Q
from django.db.models.functions import Coalesce
from django.utils import timezone

from catalogue import Message
from clusters.models import VirtualCluster
from clusters.placement import Backfill, Ending, Freed, PlacementResult, Reservation, VcState
from clusters.shares import node_gpus
from clusters.sharing import Held, decayed_usage
from jobs.lifecycle import PREEMPTIONS
from jobs.models import Job, JobEvent, JobState, Task, TaskAttempt, TaskState
from jobs.protocol.priority import grace_seconds
from jobs.protocol.spec import NormalizedSpec
from queries.prepared import ListOf, Prepared, PreparedUpdate
from scheduling.models import VcQueue
from scheduling.quota import SpecCache, task_resources

# Usage older than this many half-lives weighs under 1/1000: not read.
HALF_LIVES_READ = 10
# Recent usage is read again after this long (it moves slowly; a pass should not read it each time).
USAGE_REFRESH_S = 30.0
# Expected starts take a job to run the share of its time limit its owner's recent jobs ran (the
# median of the last RUN_TIMES_KEPT that ended with a limit, capped at 1), its VC's while its owner
# has fewer than RUN_TIMES_LEAST, the cluster's while the VC has none, its whole limit while no job
# has ended; a running job, the median of those that ran longer than it has. Read from the newest
# RUN_TIMES_READ ended jobs. Reservations and backfill keep to the limits (their guarantee).
RUN_TIMES_KEPT = 20
RUN_TIMES_LEAST = 3
RUN_TIMES_READ = 5000
# A preempted job is expected to end as the last EXITS_KEPT preempted jobs did (from its SIGTERM to
# its requeue), read among the newest EXITS_WINDOW job events.
EXITS_KEPT = 20
EXITS_WINDOW = 20000


class RecentUsage:
    """Each user's decayed usage per fair-share VC (GPU-hours, or CPU-hours in a VC without
    GPUs), read at most every USAGE_REFRESH_S."""

    def __init__(self, specs: SpecCache) -> None:
        self._specs = specs
        self._read_at = float("-inf")
        self._vcs: frozenset[str] = frozenset()
        self._usage: dict[tuple[str, str], float] = {}

    def of(self, vcs: dict[str, VcState]) -> dict[tuple[str, str], float]:
        """(VC, user) -> usage, for the fair-share VCs among `vcs`."""
        wanted = frozenset(name for name, vc in vcs.items() if vc.fair_share)
        if not wanted:
            return {}
        if wanted != self._vcs or time.monotonic() - self._read_at > USAGE_REFRESH_S:
            cpu_vcs = {name for name in wanted if vcs[name].limit.gpu == 0}
            self._usage = read_usage(wanted, cpu_vcs, timezone.now(), self._specs)
            self._vcs, self._read_at = wanted, time.monotonic()
        return self._usage


def read_usage(vcs: Iterable[str], cpu_vcs: set[str], now: datetime, specs: SpecCache) -> dict[tuple[str, str], float]:
    """(VC, user) -> decayed usage: the ended attempts kept (TaskAttempt) and the running tasks."""
    half_life_s = settings.PAI_FAIR_SHARE_HALF_LIFE_HOURS * 3600
    since = now - timedelta(seconds=half_life_s * HALF_LIVES_READ)
    names = list(vcs)
    fields = ("job__virtual_cluster__name", "job__owner__username", "job_id", "role", "gpus", "started_at")
    ended = TaskAttempt.objects.filter(
        job__virtual_cluster__name__in=names, started_at__isnull=False, finished_at__gte=since
    ).values_list(*fields, "finished_at")
    running = Task.objects.filter(
        job__virtual_cluster__name__in=names, state=TaskState.RUNNING, started_at__isnull=False
    ).values_list(*fields)
    rows = [*ended, *((*row, None) for row in running)]
    spec_of = specs.get_many({row[2] for row in rows if row[0] in cpu_vcs})
    spans: dict[str, list[Held]] = {}
    for vc, user, job_id, role, gpus, started_at, finished_at in rows:
        if vc in cpu_vcs:
            spec = spec_of.get(job_id)
            amount = float(task_resources(spec, role).cpu) if spec and role in spec["taskRoles"] else 0.0
        else:
            amount = float(len(gpus))
        end = finished_at.timestamp() if finished_at is not None else None
        spans.setdefault(vc, []).append(Held(user, amount, started_at.timestamp(), end))
    return {
        (vc, user): usage
        for vc, held in spans.items()
        for user, usage in decayed_usage(held, now.timestamp(), half_life_s).items()
    }


class RunTimes:
    """How much of its time limit a job is expected to run (an estimate, for expected starts only):
    the median share its owner's recent jobs ran (else its VC's, else the cluster's, else None: all
    of it); for a job
    that has run a while, the median of those that ran longer. And how long a preempted job takes
    to end after its SIGTERM (the median of the last EXITS_KEPT preemptions). Read at most every
    USAGE_REFRESH_S."""

    def __init__(self) -> None:
        self._read_at = float("-inf")
        self._shares: dict[tuple[str, str], list[float]] = {}  # (VC, user) and (VC, "") -> shares, sorted
        self._exits: list[float] = []  # seconds from a preemption's SIGTERM to its job's requeue, sorted

    def _read(self) -> None:
        if time.monotonic() - self._read_at > USAGE_REFRESH_S:
            self._shares, self._exits, self._read_at = read_run_times(), read_exit_times(), time.monotonic()

    def _samples(self, vc: str, user: str) -> list[float] | None:
        self._read()
        for key in ((vc, user), (vc, ""), ("", "")):
            if (found := self._shares.get(key)) is not None:
                return found
        return None

    def share(self, vc: str, user: str, ran: float = 0.0) -> float | None:
        """The share of its limit a job of `user` in `vc` is expected to run, having run the share
        `ran` of it already: the median of the recent shares over `ran` (None: unknown, or none ran
        that long)."""
        samples = self._samples(vc, user)
        return None if samples is None else median_over(samples, ran)

    def expected_s(self, vc: str, user: str, limit_s: float | None) -> float | None:
        """How long a job of `user` in `vc` limited to `limit_s` is expected to run (None: unknown)."""
        share = self.share(vc, user) if limit_s else None
        return None if share is None or not limit_s else share * limit_s

    def exit_s(self, ending_s: float) -> float | None:
        """How long a preempted job is expected to take to end, having been ending for `ending_s`
        (None: no preemption seen lately, or none took that long)."""
        self._read()
        return median_over(self._exits, ending_s)


def median_over(samples: list[float], least: float) -> float | None:
    """The median of the sorted `samples` over `least` (all of them for 0), None when none is."""
    index = bisect.bisect_right(samples, least) if least > 0 else 0
    return statistics.median(samples[index:]) if index < len(samples) else None


def read_run_times() -> dict[tuple[str, str], list[float]]:
    """(VC, user), (VC, "") and the cluster's ("", "") -> the shares of their time limit the last
    RUN_TIMES_KEPT jobs that ended (done, failed, or ended at their limit) ran, capped at 1, sorted;
    a user's with at least RUN_TIMES_LEAST of them."""
    ended = Q(state__in=[JobState.SUCCEEDED, JobState.FAILED]) | Q(ending_cause=Job.Ending.TIME_LIMIT)
    known = {"time_limit_seconds__isnull": False, "launched_at__isnull": False, "completed_at__isnull": False}
    rows = (
        Job.objects.filter(ended, **known)
        .order_by("-completed_at")
        .values_list("virtual_cluster__name", "owner__username", "launched_at", "completed_at", "time_limit_seconds")
    )
    samples: dict[tuple[str, str], list[float]] = {}
    for vc, user, launched_at, completed_at, limit in rows[:RUN_TIMES_READ]:
        if launched_at is None or completed_at is None or not limit:
            continue
        share = min(1.0, max(0.0, (completed_at - launched_at).total_seconds() / limit))
        for key in ((vc, user), (vc, ""), ("", "")):
            kept = samples.setdefault(key, [])
            if len(kept) < RUN_TIMES_KEPT:
                kept.append(share)
    return {key: sorted(kept) for key, kept in samples.items() if key[1] == "" or len(kept) >= RUN_TIMES_LEAST}


def read_exit_times() -> list[float]:
    """How long the last EXITS_KEPT preempted jobs took from their SIGTERM (event `preempted`) to
    their requeue (`requeued`: their room free), sorted; among the newest EXITS_WINDOW events."""
    newest = JobEvent.objects.aggregate(last=Max("id"))["last"]
    if newest is None:
        return []
    rows = (
        JobEvent.objects.filter(id__gt=newest - EXITS_WINDOW, kind__in=("preempted", "requeued"))
        .order_by("-id")
        .values_list("job_id", "kind", "created_at")
    )
    requeued: dict[int, datetime] = {}  # job -> its requeue after the preemption not yet paired
    found: list[float] = []
    for job_id, kind, at in rows.iterator():
        if kind == "requeued":
            requeued[job_id] = at
        elif (then := requeued.pop(job_id, None)) is not None:
            found.append(max(0.0, (then - at).total_seconds()))
            if len(found) >= EXITS_KEPT:
                break
    return sorted(found)


def backfill_plan(
    specs: SpecCache, now: float, run_times: RunTimes | None = None, gpus: dict[int, dict[int, str]] | None = None
) -> Backfill:
    """What backfill plans by (clusters.placement): each running job's tasks, free again when its
    time limit ends it and the grace that gives it is over (a borrowed one: when its lender may
    take it back), and the reservations an earlier pass stored. With `run_times`, each also says
    when it is expected to end (expected starts only): at its owner's recent share of its limit,
    the median of those over the share it has run already once it has run past that (halfway from
    now to its limit when none ran so long); a preempted one when preempted jobs lately ended after
    their SIGTERM (by its deadline at the latest), and so a borrowed one once its lender's own jobs
    wait (`Backfill.reclaim_s`)."""
    found = _ends(now)
    ends: dict[int, tuple[str, float]] = {row.pk: (row.vc, row.ends_at) for row in found if row.ends_at is not None}
    own_vc = {row.pk: row.own_vc for row in found}
    expected: dict[int, float] = {}
    if run_times is not None:
        began = _preempted_at([row.pk for row in found if row.preempted is not None])
        for row in found:
            if row.preempted is not None and row.pk in began:
                expected[row.pk] = expected_exit(run_times, began[row.pk], row.preempted, now)
            elif row.ends_at is not None and row.launched_at is not None and row.limit_s:
                ran = max(0.0, now - row.launched_at) / row.limit_s
                share = run_times.share(row.own_vc, row.owner, ran)
                if share is not None:
                    expected[row.pk] = row.launched_at + share * row.limit_s
                elif run_times.share(row.own_vc, row.owner) is not None:  # (it ran longer than any did)
                    expected[row.pk] = now + max(0.0, row.ends_at - now) / 2
    rows = _RUNNING_TASKS(list(ends))
    spec_of = specs.get_many({row[0] for row in rows})
    types = node_gpus() if gpus is None else gpus  # (node_gpus(), read once a pass by the scheduler)
    freed: dict[int, list[Freed]] = {}
    for job_id, role, node_id, node, indexes in rows:
        res = task_resources(spec_of[job_id], role)
        on_node = types.get(node_id, {})
        held = tuple((int(index), on_node.get(int(index), "")) for index in indexes)
        freed.setdefault(job_id, []).append(Freed(node, held, res.cpu, res.memory_mb))
    ending = []
    for pk, parts in freed.items():
        (vc, at), grace = ends[pk], job_grace(spec_of[pk])
        # (a job past its limit is in its grace: free at its kill; one past that too, at the next second)
        at = max(at, now + 1 - grace)
        borrowed = vc != own_vc.get(pk, vc)
        ending.append(Ending(vc, at, tuple(parts), grace_s=grace, expected_at=expected.get(pk), borrowed=borrowed))
    kept = {
        name: Reservation(stored["job"], stored["start"], tuple(stored["nodes"]))
        for name, stored in _RESERVATIONS()
        if stored
    }
    return Backfill(now, ending, kept, reclaim_s=run_times.exit_s(0.0) if run_times is not None else None)


def expected_exit(run_times: RunTimes, began: float, deadline: float, now: float) -> float:
    """When a job preempted at `began` (its SIGTERM) is expected to have ended: as preempted jobs
    lately did, or halfway from now to its deadline once it took longer than they all did, by its
    deadline while none was seen."""
    took = run_times.exit_s(max(0.0, now - began))
    if took is not None:
        return min(deadline, max(now, began + took))
    return deadline if run_times.exit_s(0.0) is None else min(deadline, now + max(0.0, deadline - now) / 2)


def _preempted_at(keys: list[int]) -> dict[int, float]:
    """Each of these jobs -> when its last preemption began (its event `preempted`)."""
    if not keys:
        return {}
    rows = (
        JobEvent.objects.filter(job_id__in=keys, kind="preempted")
        .values("job_id")
        .annotate(last=Max("created_at"))
        .values_list("job_id", "last")
    )
    return {key: last.timestamp() for key, last in rows}


def job_grace(spec: NormalizedSpec) -> int:
    """The grace a job's time limit gives it (scheduling.terminating.grace_of, from its spec)."""
    return grace_seconds(spec, default=settings.PAI_GRACE_SECONDS, cap=settings.PAI_MAX_GRACE_SECONDS)


def backfill_notes(result: PlacementResult) -> dict[int, Message]:
    """What each job backfill started says (its event): ahead of which job, and why that delays it not."""
    notes = {}
    for key, started in result.backfilled.items():
        start = _clock(started.start)
        if started.ends_by is not None and started.ends_by <= started.start:
            notes[key] = Message.of(
                "event.backfilled.before", job=started.ahead_of, ends=_clock(started.ends_by), start=start
            )
        else:
            notes[key] = Message.of("event.backfilled.elsewhere", job=started.ahead_of, start=start)
    return notes


def _clock(epoch: float) -> str:
    """`14:05` in the portal's time zone (`2024-05-01 14:05` beyond today)."""
    moment = datetime.fromtimestamp(epoch, tz=timezone.get_current_timezone())
    today = timezone.localtime().date()
    return moment.strftime("%H:%M") if moment.date() == today else moment.strftime("%Y-%m-%d %H:%M")


def record_queues(result: PlacementResult, vcs: dict[str, VcState]) -> None:
    """Each VC's queue as this placement left it, with its first job's reservation (one row per
    VC); the queues of VCs with nobody waiting are emptied."""
    rows = {row.vc_id: row for row in _QUEUES()}
    vc_ids = dict(_VC_IDS())
    for name, keys in result.queues.items():
        if name not in vcs or name not in vc_ids:
            continue
        found = result.reservations.get(name)
        reserved = None if found is None else {"job": found.job, "start": found.start, "nodes": list(found.nodes)}
        row = rows.get(vc_ids[name])
        if row is None:
            VcQueue.objects.create(vc_id=vc_ids[name], job_ids=keys, reservation=reserved)
        elif row.job_ids != keys or row.reservation != reserved:
            _SET_QUEUE(row.pk, job_ids=keys, reservation=reserved, updated_at=timezone.now())
    emptied = [row.pk for row in rows.values() if row.job_ids and row.vc_id not in _ids(vc_ids, result.queues)]
    if emptied:
        VcQueue.objects.filter(pk__in=emptied).update(job_ids=[], reservation=None, updated_at=timezone.now())


class ExpectedStarts:
    """Each waiting job's expected start as the last placement planned it (Job.expected_start_at:
    the job list sorts by it), written only where it changed; cleared once a job waits no more."""

    def __init__(self) -> None:
        self._written: dict[int, int | None] | None = None  # job -> what this scheduler wrote (None: first pass)

    def record(self, expected: dict[int, float | None]) -> None:
        wanted = {key: None if start is None else round(start) for key, start in expected.items()}
        if self._written is None:  # (an earlier scheduler's values: cleared where the job waits no more)
            Job.objects.filter(expected_start_at__isnull=False).exclude(pk__in=list(wanted)).update(
                expected_start_at=None
            )
            changed = dict(wanted)
        else:
            written = self._written
            changed = {key: start for key, start in wanted.items() if written.get(key) != start}
            changed.update((key, None) for key, start in written.items() if key not in wanted and start is not None)
        by_start: dict[int | None, list[int]] = {}
        for key, start in changed.items():
            by_start.setdefault(start, []).append(key)
        for start, keys in by_start.items():  # (one UPDATE per moment: many jobs share a limit's end)
            moment = None if start is None else datetime.fromtimestamp(start, tz=UTC)
            Job.objects.filter(pk__in=keys).update(expected_start_at=moment)
        self._written = {key: start for key, start in wanted.items() if start is not None}


def _ids(vc_ids: dict[str, int], queues: dict[str, list[int]]) -> set[int]:
    return {vc_ids[name] for name in queues if name in vc_ids}


def preemption_starts(keys: set[int], run_times: RunTimes | None = None, now: float | None = None) -> dict[int, float]:
    """Each of these jobs that preempts others -> when the last of its victims is expected to have
    ended (its expected start: the room is its own then): as preempted jobs lately did after their
    SIGTERM (`run_times`), by its victims' deadlines at the latest (the end of their grace)."""
    if not keys:
        return {}
    rows = list(
        Job.objects.filter(ending_by__in=keys, ending_deadline__isnull=False).values_list(
            "ending_by", "pk", "ending_deadline"
        )
    )
    began = _preempted_at([pk for _, pk, _ in rows]) if run_times is not None else {}
    at = time.time() if now is None else now
    starts: dict[int, float] = {}
    for key, pk, deadline in rows:
        if key is None or deadline is None:
            continue
        end = deadline.timestamp()
        if run_times is not None and pk in began:
            end = expected_exit(run_times, began[pk], end, at)
        starts[key] = max(starts.get(key, end), end)
    return starts


class _Running(NamedTuple):
    pk: int
    vc: str  # the VC whose quota it holds (its lender's when borrowed)
    ends_at: float | None  # its launch + its time limit (None: no limit)
    launched_at: float | None
    limit_s: int | None
    own_vc: str
    owner: str
    preempted: float | None  # its preemption's deadline while it ends by one (None: not preempted)


# Read at every placement: their SQL compiled once.
_RUNNING_JOBS: Prepared[tuple[Any, ...]] = Prepared(
    lambda: Job.objects.filter(state=JobState.RUNNING).values_list(
        "pk",
        "launched_at",
        "time_limit_seconds",
        "virtual_cluster__name",
        "owner__username",
        "ending_cause",
        "ending_deadline",
        Coalesce("borrowed_from__name", "virtual_cluster__name"),  # (a Prepared read's annotations last)
    )
)
_QUEUES: Prepared[VcQueue] = Prepared(lambda: VcQueue.objects.all())
_VC_IDS: Prepared[tuple[str, int]] = Prepared(lambda: VirtualCluster.objects.values_list("name", "pk"))
_RUNNING_TASKS: Prepared[tuple[int, str, int, str, list[int]]] = Prepared(
    lambda job_ids: Task.objects.filter(job_id__in=job_ids, state=TaskState.RUNNING, node__isnull=False).values_list(
        "job_id", "role", "node_id", "node__name", "gpus"
    ),
    ListOf(int),
)
_RESERVATIONS: Prepared[tuple[str, Any]] = Prepared(
    lambda: VcQueue.objects.filter(reservation__isnull=False).values_list("vc__name", "reservation")
)
_SET_QUEUE = PreparedUpdate(
    lambda queue_id: VcQueue.objects.filter(pk=queue_id), int, sets=("job_ids", "reservation", "updated_at")
)


def _ends(now: float) -> list[_Running]:
    """Each running job, the VC whose quota it holds and when it ends: its launch + time limit
    (None: no limit). A job on borrowed quota too: its lender takes it back sooner only for the
    lender's own jobs (a preemption), which no other VC's reservation may count on."""
    found = []
    for pk, launched_at, limit, own_vc, owner, cause, deadline, vc in _RUNNING_JOBS():
        launched = launched_at.timestamp() if launched_at is not None else None
        ends_at = launched + limit if launched is not None and limit else None
        preempted = deadline.timestamp() if deadline is not None and cause in PREEMPTIONS else None
        found.append(_Running(pk, vc, ends_at, launched, limit, own_vc, owner, preempted))
    return found


class QueuePlace(NamedTuple):
    """A waiting job's place in its VC's queue (1 = next; None in a Slurm VC, whose queue is
    Slurm's), its expected start (None: unknown) and what the page and the API say of it."""

    position: int | None
    start: datetime | None
    note: Message


# A VC's queue as the scheduler last wrote it: each waiting job's detail reads it, compiled once.
_QUEUE_OF_VC: Prepared[VcQueue] = Prepared(lambda vc_id: VcQueue.objects.filter(vc_id=vc_id).order_by("pk")[:1], int)


def queue_place(job: Job) -> QueuePlace | None:
    """Where a waiting job stands, or None when the scheduler has not queued it (yet)."""
    if job.state != JobState.WAITING:
        return None
    start = job.expected_start_at
    if job.virtual_cluster.slurm_partition:
        return (
            None
            if start is None
            else QueuePlace(None, start, Message.of("queue.expected_start.slurm", start=_clock(start.timestamp())))
        )
    row = _QUEUE_OF_VC.first(job.virtual_cluster_id)
    position = row.position(job.pk) if row is not None else None
    if position is None:
        return None
    note = (
        Message.of("queue.no_expected_start")
        if start is None
        else Message.of("queue.expected_start", start=_clock(start.timestamp()))
    )
    return QueuePlace(position, start, note)
