"""The scheduler loop: it only orders the phases of a pass and waits between idle passes.

Each pass: take the lease (one active scheduler: scheduling.lease), reconcile after a start or a
failed pass (scheduling.nodes), launch what the backends have ready, the node heartbeat, stop
requests (scheduling.stopping), jobs past their time limit (scheduling.time_limits), preempted
jobs whose tasks are gone (scheduling.preempting), the tasks that ended and the starts that failed
(scheduling.ending), the claimed tasks not started yet (scheduling.starting), held jobs whose
dependencies are met let into the queue (scheduling.dependencies), placement of waiting jobs
(scheduling.placing, which begins preemptions), then each backend's own pass
(scheduling.backends, .registered).

Each phase imports only the phases below it (tests/architecture/test_phases.py): ending decides
and starts nothing; starting starts and decides nothing; the loop carries what one hands the next.
Executor calls never run inside a DB transaction; every state change goes through jobs.lifecycle,
whose conditional UPDATEs make a crash at any point lose no job and start no task twice.
"""

from __future__ import annotations

import logging
import signal
import time
from typing import Any

from django.conf import settings
from django.db import close_old_connections, connection

from scheduling import dependencies, ending, nodes, stopping, time_limits
from scheduling.backends import Backends
from scheduling.ending import FailedStart
from scheduling.guard import DATABASE_ERRORS
from scheduling.idle import IdleWait
from scheduling.lease import Holder, Lease
from scheduling.notices import Notices
from scheduling.placing import Placer
from scheduling.registered import register_backends
from scheduling.starting import NodeTrouble, Starter
from scheduling.terminating import Terminator

log = logging.getLogger("pai.scheduler")

# A pass the database failed runs again after DATABASE_RETRY_S, doubled each time the database
# could not be reached after it (up to DATABASE_RETRY_MAX_S).
DATABASE_RETRY_S = 0.05
DATABASE_RETRY_MAX_S = 2.0


class Scheduler:
    def __init__(self, holder: str | None = None):
        self.holder = holder or str(Holder.here())
        self.lease = Lease(self.holder)
        self.reconciled = False
        self.stopping = False
        self.unreachable = 0  # failed passes running after which the database could not be reached
        self.failed_starts: list[FailedStart] = []  # from the starts, for the next ending phase
        self.unstarted: set[tuple[int, int]] = set()  # task attempts known not to run anywhere
        self.heartbeat = nodes.Heartbeat()
        self.starter = Starter(NodeTrouble(), self.failed_starts)
        self.backends = Backends()
        register_backends(self.backends, self.starter)
        self.terminator = Terminator()  # the one graceful-end path: whose tasks it sent SIGTERM
        self.stopper = stopping.Stopper(self.terminator)
        self.placer = Placer(self.starter, self.backends, self.terminator)
        self.waiter = IdleWait(self.backends, lambda: self.stopping)

    def take_lease(self) -> bool:
        return self.lease.take()

    def release_lease(self) -> None:
        self.lease.release()

    def reconcile(self) -> None:
        self.unstarted = nodes.reconcile(self.backends)

    def run_once(self) -> bool:
        """One pass. Returns True when it did any work (the loop then goes again at once)."""
        began = time.monotonic()
        try:
            return self._pass()
        finally:
            self.waiter.passed(began, time.monotonic())

    def _pass(self) -> bool:
        if not connection.in_atomic_block:  # (tests run a pass inside their transaction)
            close_old_connections()
        self.waiter.leading = self.lease.take()
        if not self.waiter.leading:
            self.reconciled = False  # (another ran the cluster meanwhile: what this one knew is stale)
            return False
        if not self.reconciled:
            self.reconcile()
            self.reconciled = True
        # A backend's ready jobs hold their slots (Slurm) until launched: before anything else.
        launched = self._launch_ready()
        nodes_changed = self.heartbeat.check(self.backends)
        stopped = self.stopper.carry_out(self.backends)
        stopped |= time_limits.end_overdue_jobs(self.backends, terminator=self.terminator)
        preempted = self.placer.preempter.carry_out()
        ended = ending.run(self.backends, self.failed_starts, self.heartbeat.suspects, meanwhile=self._launch_ready)
        for node, ports, said in ended.ports_held:  # (the job placed again gets other ports there)
            self.starter.trouble.ports_held(node, ports, said)
        for node, ports in ended.ports_freed:
            self.starter.trouble.ports_freed(node, ports)
        started = self.starter.start_unstarted(self.unstarted | ended.retried)
        self.unstarted = set()
        stopped |= self.stopper.look_again(self.backends)  # (those that obeyed their SIGTERM meanwhile)
        freed = stopped or preempted or ended.changed or nodes_changed
        freed |= dependencies.judge_held_jobs()  # (jobs that joined the queue: placement looks again)
        placed = self.placer.schedule_waiting(resources_freed=freed)
        launched |= self._launch_ready()  # (ready while the pass ran)
        passed = [backend.run_pass() for backend in self.backends]
        return launched or freed or started or placed or any(passed) or bool(self.failed_starts)

    def run_pass(self) -> bool:
        """One pass as the loop runs it. A pass that failed is run again, reconciling first
        (whatever it left half done, the next one mends); one the database failed (scheduling.guard:
        no job was charged for it) on a new connection, after a short wait that grows while the
        database cannot be reached."""
        try:
            return self.run_once()
        except DATABASE_ERRORS as exc:
            self.reconciled = False
            wait = self._reconnect()
            log.warning("scheduler pass: the database failed (%s); running the pass again in %.2f s", exc, wait)
            self.idle_wait(wait, wake_on_bell=False)  # (its wait grows while the database is away)
            return True
        except Exception:
            log.exception("scheduler pass failed; reconciling and retrying")
            self.reconciled = False
            return False

    def _reconnect(self) -> float:
        """A new database connection; how long to wait before the next pass."""
        if not connection.in_atomic_block:  # (tests run a pass inside their transaction)
            connection.close()
            try:
                connection.ensure_connection()
            except DATABASE_ERRORS:
                self.unreachable += 1
            else:
                self.unreachable = 0
        return min(DATABASE_RETRY_MAX_S, DATABASE_RETRY_S * 2**self.unreachable)

    def _launch_ready(self) -> bool:
        return any([backend.launch_ready() for backend in self.backends])

    def idle_wait(self, seconds: float, *, wake_on_bell: bool = True) -> None:
        """Sleep between idle passes, woken early as scheduling.idle says."""
        self.waiter(seconds, wake_on_bell=wake_on_bell)

    def run_forever(self, interval: float | None = None) -> None:
        idle_sleep = settings.PAI_SCHEDULER_INTERVAL if interval is None else interval

        def finish_pass_and_exit(signum: int, frame: Any) -> None:
            log.info("signal %s: finishing the current pass, then exiting", signum)
            self.stopping = True

        signal.signal(signal.SIGTERM, finish_pass_and_exit)
        signal.signal(signal.SIGINT, finish_pass_and_exit)
        log.info("scheduler %s started", self.holder)
        notices = self.waiter.notices = Notices()  # (heard from the web on any machine: PostgreSQL)
        try:
            while not self.stopping:
                if not self.run_pass():
                    self.idle_wait(idle_sleep)
        finally:
            notices.close()
            self.release_lease()
            log.info("scheduler %s stopped", self.holder)
