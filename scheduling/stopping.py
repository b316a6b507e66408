"""Stop requests: a user's (or an admin's, or the portal's own) stop is carried out here, before
anything else of the pass ends or starts. The job goes STOPPING, then takes the one graceful-end
path with the cause `stop` (scheduling.terminating): its running tasks get SIGTERM and the job's
grace period, the deadline stored first, and once they have all ended or the deadline has passed,
everything the job holds is removed and the job is STOPPED. Bounded by the grace (at most
PAI_MAX_GRACE_SECONDS), and a restart in between loses neither stop nor deadline.

A pass does a bounded share of the work, as placing's launch budget does: STOP_BUDGET_S, split
between the users whose jobs are stopping (one job each in turn), the jobs it looked at least
lately first; the rest waits for the next passes, so a 10,000-run sweep's Stop holds no one else's
job. Jobs that wait (never started, or wait again) on the portal's own VCs hold nothing to signal
or remove: UNSTARTED_BATCH of them at a time are stopped in bulk (lifecycle.stop_unstarted), again
split between their users.
"""

from __future__ import annotations

import itertools
import time
from collections import defaultdict
from collections.abc import Iterable
from typing import Any

from django.db.models import Q, QuerySet
from django.utils import timezone

from clusters.models import VirtualCluster
from jobs import lifecycle
from jobs.models import Job, JobState
from scheduling.backends import Backends
from scheduling.guard import job_guard
from scheduling.terminating import STOPPED, Terminator, stop_diagnostics

# A pass stops stopping after this long (having done at least one bulk batch and one job) and
# leaves the rest to the next pass, so that exits, starts and placement are never stuck behind a
# big sweep's Stop.
STOP_BUDGET_S = 0.3
UNSTARTED_BATCH = 500  # waiting jobs stopped in one bulk transaction


def _asked_unstarted(owned: QuerySet[VirtualCluster] | None) -> QuerySet[Job]:
    """Waiting jobs asked to stop, on the VCs no backend owns."""
    waiting = Job.objects.filter(ending_cause=Job.Ending.STOP, state=JobState.WAITING)
    return waiting if owned is None else waiting.exclude(virtual_cluster__in=owned)


def _owners_asked_unstarted(owned: QuerySet[VirtualCluster] | None) -> QuerySet[Job, int]:
    """Their owners (read every pass: Backends.prepared)."""
    return _asked_unstarted(owned).order_by().values_list("owner_id", flat=True).distinct()


def _stopped_one_by_one(owned: QuerySet[VirtualCluster] | None) -> QuerySet[Job, tuple[int, int]]:
    """(pk, owner) of the jobs stopped one at a time: running or a backend's waiting ones asked to
    stop, and those stopping in their grace (read every pass: Backends.prepared)."""
    asked = Q(ending_cause=Job.Ending.STOP) & (
        Q(state=JobState.RUNNING) | Q(state=JobState.WAITING, virtual_cluster__in=owned if owned is not None else [])
    )
    return Job.objects.filter(asked | Q(state=JobState.STOPPING)).values_list("pk", "owner_id")


def fair_order(rows: Iterable[tuple[int, int]], looked_at: dict[int, int]) -> list[int]:
    """Job ids of (job id, owner id) rows in turns between their owners, each owner's in the order
    they were last looked at (never first, then by id)."""
    by_owner: dict[int, list[int]] = defaultdict(list)
    for job_id, owner_id in rows:
        by_owner[owner_id].append(job_id)
    queues = [sorted(ids, key=lambda job_id: (looked_at.get(job_id, 0), job_id)) for ids in by_owner.values()]
    queues.sort(key=lambda ids: (looked_at.get(ids[0], 0), ids[0]))
    return [job_id for turn in itertools.zip_longest(*queues) for job_id in turn if job_id is not None]


class Stopper:
    """The phase, with what it keeps between passes: when it last looked at each stopping job."""

    def __init__(self, terminator: Terminator | None = None) -> None:
        self.terminator = terminator or Terminator()
        self._passes = 0
        self._looked_at: dict[int, int] = {}
        self._signalled: list[int] = []  # jobs whose stop began this pass (look_again)

    def carry_out(self, backends: Backends) -> bool:
        """True when a job began or finished stopping (its room is freed, or about to be)."""
        self._passes += 1
        self._signalled = []
        deadline = time.monotonic() + STOP_BUDGET_S
        changed = self._stop_unstarted(backends, deadline)
        return self._stop_each(backends, deadline) or changed

    def _stop_unstarted(self, backends: Backends, deadline: float) -> bool:
        """Waiting jobs asked to stop, on the VCs no backend owns (a backend's waiting job may hold
        a unit there: the one-by-one path cancels it), in bulk batches."""
        changed = False
        while True:
            owners: list[int] = backends.prepared(_owners_asked_unstarted)()
            if not owners:
                return changed
            waiting = _asked_unstarted(backends.owned_vcs())
            share = max(1, UNSTARTED_BATCH // len(owners))
            batch: dict[int, str] = {}
            said: dict[str, dict[str, Any]] = {}
            for owner_id in owners:
                rows = waiting.filter(owner_id=owner_id).order_by("pk")
                for pk, reason, message in rows.values_list("pk", "ending_reason", "ending_reason_message")[:share]:
                    batch[pk], said[reason] = reason, message
            reasons = {reason: stop_diagnostics(reason, message) for reason, message in said.items()}
            if not lifecycle.stop_unstarted(batch, STOPPED.code, reasons):
                return changed  # (claimed meanwhile: the one-by-one path has them)
            changed = True
            if time.monotonic() > deadline:
                return changed

    def _stop_each(self, backends: Backends, deadline: float) -> bool:
        """The jobs stopped one at a time (running, stopping in their grace, a backend's waiting
        ones), in turns between their owners, until the budget is spent (one at least)."""
        rows: list[tuple[int, int]] = backends.prepared(_stopped_one_by_one)()
        self._looked_at = {job_id: self._looked_at[job_id] for job_id, _ in rows if job_id in self._looked_at}
        changed = False
        for job_id in fair_order(rows, self._looked_at):
            job = Job.objects.select_related("virtual_cluster").filter(pk=job_id).first()
            if job is not None:
                changed |= self._stop_one(job, backends)
            self._looked_at[job_id] = self._passes
            if time.monotonic() > deadline:
                break
        return changed

    def look_again(self, backends: Backends) -> bool:
        """The jobs whose stop began this pass, once more later in the same pass (the scheduler
        calls it after the ending and starting phases): those whose tasks obeyed their SIGTERM
        meanwhile (most do, within milliseconds) are torn down and STOPPED now, their room free
        for this pass's placement, not one pass and an idle wait later (an adaptive search's
        pruned run held its GPU for it). One poll each; a task still in its grace is looked at
        next pass, as before; the grace is the same. Within STOP_BUDGET_S again. True when one was
        STOPPED."""
        signalled, self._signalled = self._signalled, []
        deadline = time.monotonic() + STOP_BUDGET_S
        changed = False
        for job_id in signalled:
            job = Job.objects.select_related("virtual_cluster").filter(pk=job_id, state=JobState.STOPPING).first()
            if job is not None:
                changed |= self._stop_one(job, backends)
            if time.monotonic() > deadline:
                break
        return changed

    def _stop_one(self, job: Job, backends: Backends) -> bool:
        """One job's step: STOPPING, then the graceful end (scheduling.terminating) till STOPPED.
        True when it began or finished stopping."""
        changed = False
        # (A stop that fails is logged and tried again next pass; the other jobs' go on.)
        with job_guard(job.pk, backends, "stop it"):
            if job.state != JobState.STOPPING:
                if not lifecycle.begin_stopping(job):
                    return False  # it finished meanwhile
                job.state = JobState.STOPPING
                changed = True
                self._signalled.append(job.pk)
            # (On a Slurm VC too: the SIGTERM goes through each task's wrapper, and Slurm's scancel,
            # which signals every process of the step at once, comes after the grace.)
            changed |= self.terminator.end(job, Job.Ending.STOP, backends, timezone.now())
        return changed
