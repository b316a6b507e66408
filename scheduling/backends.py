"""What a backend that places by itself provides to the loop (Slurm; a Kubernetes backend would be a
second implementation of the same interface and nothing else).

A backend owns some VCs: their jobs are not in the portal's queue or placement, the backend takes
them from WAITING to claimed (lifecycle.claim_for_launch) in its own pass and starts their tasks
through scheduling.starting; their exits are followed like any others (scheduling.ending). It owns
the nodes of one executor kind too: the heartbeat leaves them to it.

This module sits below every phase: a phase that ends a job asks `Backends.cancel` without knowing
which backend that is. Which backends run is scheduling.registered's list.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any, Protocol

from django.db.models import QuerySet

from clusters.models import VirtualCluster
from jobs.models import Job
from queries.prepared import Prepared

# A read over the VCs the backends own: the query built from their owned_vcs() (None: no backend).
OwnedRead = Callable[[QuerySet[VirtualCluster] | None], QuerySet[Any]]


class Backend(Protocol):
    # Node.executor of the nodes it watches itself (no heartbeat; not the portal's to place on).
    node_kind: str

    def owns(self, vc: VirtualCluster) -> bool:
        """Whether this VC's jobs are this backend's (in memory: asked per job)."""
        ...

    def owned_vcs(self) -> QuerySet[VirtualCluster]:
        """The VCs it owns, as a query the queue leaves out."""
        ...

    def run_pass(self) -> bool:
        """Its share of a pass (submit, follow, explain); True when it changed anything."""
        ...

    def launch_ready(self) -> bool:
        """Claim and start the jobs that became ready since it last looked (cheap; asked often)."""
        ...

    def probes_ready(self) -> bool:
        """Whether launch_ready has work now: the idle wait asks this and wakes the loop early."""
        ...

    @property
    def awaiting_reports(self) -> bool:
        """Something may become ready any moment: the idle wait checks more often."""
        ...

    def cancel(self, job: Job) -> None:
        """End whatever the backend holds for the job (a stop, or its attempt ended)."""
        ...


class Backends:
    """The registered backends of one scheduler, as the phases ask about them."""

    def __init__(self) -> None:
        self._all: list[Backend] = []
        self._prepared: dict[OwnedRead, Prepared[Any]] = {}

    def register(self, backend: Backend) -> None:
        self._all.append(backend)
        self._prepared.clear()  # (their reads name what the backends own)

    def prepared(self, build: OwnedRead) -> Prepared[Any]:
        """`build(self.owned_vcs())` as a read whose SQL is compiled once, for a read every pass
        makes (the VCs the backends own are a query whose SQL never changes once they are registered)."""
        found = self._prepared.get(build)
        if found is None:
            found = self._prepared[build] = Prepared(lambda: build(self.owned_vcs()))
        return found

    def __iter__(self) -> Iterator[Backend]:
        return iter(self._all)

    def owner(self, vc: VirtualCluster) -> Backend | None:
        return next((backend for backend in self._all if backend.owns(vc)), None)

    def owned_vcs(self) -> QuerySet[VirtualCluster] | None:
        """Every VC some backend owns (None when there is no backend)."""
        owned = None
        for backend in self._all:
            vcs = backend.owned_vcs()
            owned = vcs if owned is None else owned | vcs
        return owned

    def node_kinds(self) -> set[str]:
        return {backend.node_kind for backend in self._all}

    def cancel(self, job: Job) -> None:
        owner = self.owner(job.virtual_cluster)
        if owner is not None:
            owner.cancel(job)
