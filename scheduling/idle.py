"""The loop's wait between idle passes, ended early: to stop, when a task ended or a user submitted,
stopped or restarted a job (the executors and the portal's processes ring the process's bell:
clusters/executors/bells.py; on PostgreSQL a scheduler holding `notices` hears them from any
machine: scheduling/notices.py), or when a backend has launches ready (a cheap check: a few
directory listings)."""

from __future__ import annotations

import time
from collections.abc import Callable

from django.conf import settings

from clusters.executors.bells import CHANGES, EXITS, bell
from scheduling.backends import Backends
from scheduling.notices import Notices

# How often an idle scheduler wakes: to notice SIGTERM, and, while a backend awaits reports (a
# Slurm job's tasks saying where they landed: each holds its slot until launched), to launch at once.
IDLE_CHECK_S = 0.05
REPORTS_CHECK_S = 0.01
# A user's change (a submit, a stop) ends the idle wait no sooner than this many times the last
# pass's length after that pass ended: users submitting into a full cluster, each submit a new
# placement of the whole queue, keep the scheduler busy a fifth of the time at most (back to back,
# 20 submits a second into 2,000 waiting jobs took 94 % of a core, against 21 % at the interval).
# A task's end wakes it at once: what it frees is what the queue waits for.
CHANGES_PACE = 4


class IdleWait:
    def __init__(self, backends: Backends, stopping: Callable[[], bool]) -> None:
        self.backends = backends
        self.stopping = stopping
        self.changes_due = 0.0  # (monotonic) from when a user's change ends the wait
        self.notices: Notices | None = None  # (runscheduler's: PostgreSQL's NOTIFY of users' changes)
        # A standby (the lease is another's) is not woken by users' changes: they are the active
        # scheduler's to act on, and each wake would be a lease query (a storm of submits, hundreds).
        self.leading = True

    def passed(self, began: float, ended: float) -> None:
        """A pass ran from `began` to `ended` (monotonic)."""
        self.changes_due = ended + CHANGES_PACE * (ended - began)

    def __call__(self, seconds: float, *, wake_on_bell: bool = True) -> None:
        deadline = time.monotonic() + seconds
        if wake_on_bell:  # (rung by the portal's processes on this machine: jobs.wake)
            bell().listen(settings.PAI_WORK_ROOT, rings_for=CHANGES)
            if self.notices is not None:
                self.notices.listen(bell())
        changed = False
        while not self.stopping() and (left := deadline - time.monotonic()) > 0:
            if any(backend.probes_ready() for backend in self.backends):
                return
            if changed and time.monotonic() >= self.changes_due:
                return
            awaiting = any(backend.awaiting_reports for backend in self.backends)
            step = min(REPORTS_CHECK_S if awaiting else IDLE_CHECK_S, left)
            if changed:
                step = min(step, max(0.0, self.changes_due - time.monotonic()))
            if not wake_on_bell:
                time.sleep(step)
                continue
            rung = bell().wait(step)
            if EXITS in rung:
                return
            changed |= CHANGES in rung and self.leading
