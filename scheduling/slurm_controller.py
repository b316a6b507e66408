"""Slurm's controller as the scheduler calls it, and what the portal says while it does not answer.

Every squeue, sinfo, sbatch and scancel runs on a lane of the controller's own
(scheduling.executors.Lane: one call in flight, waited for up to PAI_NODE_CALL_DEADLINE_SECONDS,
a hung call not waited for again), so a controller that does not answer costs a pass one deadline
at most and the portal's own nodes are scheduled as before. A read (squeue, sinfo) answered after
its deadline is kept for the next pass: a slow controller is read late, not never.

A controller silent for PAI_NODE_DOWN_AFTER_SECONDS makes its partitions unavailable: their nodes
are down saying so (the cluster page, the API; their VCs' quotas with them) and each waiting job of
their VCs says so as its pending reason. Its first answer after that brings them back (sinfo says
each node's state again). What it could not be asked meanwhile is asked again then: a submission is
found or made by the job's Slurm name, a cancel by the sweep of scheduling.slurm.
"""

from __future__ import annotations

import logging
from concurrent.futures import Future

from django.conf import settings
from django.utils import timezone

from catalogue import Message, joined
from catalogue.reasons import Reason
from clusters.models import Node, down_reason_fields
from clusters.slurm import client
from jobs import lifecycle
from jobs.models import Job, JobState
from scheduling.executors import Lane, NodeSilent

log = logging.getLogger("pai.scheduler.slurm")


# Rows that say the controller does not answer already (their reason's first part; a NULL-safe
# filter: those to change are the others, excluded by primary key).
_SAID_BY_NODE = {"down_reason_messages__0__code": "slurm.controller_silent"}
_SAID_BY_JOB = {"pending_reason_messages__0__code": "slurm.controller_silent"}


def _unreachable(exc: BaseException) -> bool:
    return isinstance(exc, client.SlurmUnreachable)


class Controller:
    """The controller's calls on its lane; `unavailable` says whether the portal shows it down."""

    def __init__(self) -> None:
        self.lane = Lane(
            "slurm-controller", label=Message.of("slurm.controller"), unreachable=_unreachable, late_answers_count=True
        )
        self.unavailable = True  # (a fresh scheduler clears what an earlier one may have said)
        self._late: dict[str, Future[str]] = {}  # a read past its deadline, by command

    def run(self, argv: list[str]) -> str:
        """A change (sbatch, scancel). NodeSilent when not answered in time: whether it happened
        then is for a later squeue to say."""
        return self.lane.call(argv[0], lambda: client.run(argv, settings.PAI_SLURM_CONF))

    def read(self, argv: list[str]) -> str:
        """A read (squeue, sinfo): its answer, or the one a late call of the same command got."""
        what = argv[0]
        late = self._late.pop(what, None)
        if late is not None and not late.done():
            self._late[what] = late
            raise NodeSilent(self.lane.silence())
        if late is not None:
            return late.result()  # (or its error)
        answering = self.lane.answering
        future = self.lane.submit(what, lambda: client.run(argv, settings.PAI_SLURM_CONF))
        try:
            return self.lane.wait(what, future, answering=answering)
        except NodeSilent:
            self._late[what] = future
            raise

    def silent_long(self) -> bool:
        """Silent for PAI_NODE_DOWN_AFTER_SECONDS: its partitions are to be shown unavailable."""
        return self.lane.silent_for() >= settings.PAI_NODE_DOWN_AFTER_SECONDS

    def reason(self, error: Exception) -> Reason:
        return [
            Message.of(
                "slurm.controller_silent", why=self.lane.silence() if isinstance(error, NodeSilent) else str(error)
            )
        ]


def show_unavailable(partitions: list[str], vc_ids: list[int], reason: Reason) -> None:
    """The partitions' nodes down with the reason, and the reason of every waiting job of the VCs
    (each row written once per silence: rows that say so already are left alone)."""
    nodes = Node.objects.filter(executor=Node.Executor.SLURM, slurm_partition__in=partitions)
    # Their state is unknown now (sinfo's own word), whatever Slurm said last.
    newly = nodes.filter(down_since__isnull=True).update(
        down_since=timezone.now(), slurm_state="unknown", **down_reason_fields(reason)
    )
    said = nodes.filter(**_SAID_BY_NODE)
    nodes.exclude(pk__in=said).update(slurm_state="unknown", **down_reason_fields(reason))  # (drained...)
    waiting = Job.objects.filter(state=JobState.WAITING, virtual_cluster_id__in=vc_ids, held=False)
    waiting = waiting.exclude(pk__in=waiting.filter(**_SAID_BY_JOB))  # (a held job says which jobs it waits for)
    lifecycle.set_pending_reasons(dict.fromkeys(waiting.values_list("pk", flat=True), reason))
    if newly:
        log.warning("%d Slurm node(s) of %s down: %s", newly, ", ".join(partitions), joined(reason))


def show_available(vc_ids: list[int]) -> None:
    """The controller answers again: the waiting jobs no longer say it does not (the nodes are
    sinfo's to bring back, each as Slurm says)."""
    waiting = Job.objects.filter(state=JobState.WAITING, virtual_cluster_id__in=vc_ids, **_SAID_BY_JOB)
    lifecycle.set_pending_reasons(
        dict.fromkeys(waiting.values_list("pk", flat=True), (Message.of("slurm.controller_back"),))
    )
