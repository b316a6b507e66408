"""The leases: one active scheduler (the lease `main`) and one active sampler (`sampler`,
scheduling/sampler.py) at a time. A second one waits until the holder's lease expires (it died) or
is released (it stopped), except where the holder is a process of its own machine that has ended: a
scheduler or sampler restarted there after a crash (as the Procfile starts them, a scheduler with
no `--id`) takes over at once, while a standby on another machine waits the lease out.

A holder is named by its process (`Holder`): the machine's name, the pid, where that pid means this
process (the kernel's boot and the pid namespace, hashed: a pid from another machine or container
is never looked up here) and when the process started (a pid given to a new process later is not
the holder's). A live holder on the same machine, a second process started beside it included,
keeps its lease; two restarts at once take a dead one's lease once (a conditional UPDATE on its name).
The machine is named PAI_MACHINE_NAME where set (two standbys tried on one box are two machines).

Expiry is the database's clock, not the machines': a standby whose clock runs ahead takes no lease
early.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import os
import socket
import time
import uuid
from dataclasses import dataclass
from datetime import timedelta
from functools import cache
from pathlib import Path

from django.conf import settings
from django.db import IntegrityError
from django.db.models import DateTimeField, ExpressionWrapper, Q, Value
from django.db.models.functions import Now

from clusters.models import SchedulerLease

log = logging.getLogger("pai.scheduler")

LEASE_NAME = "main"
LEASE_TTL = timedelta(seconds=settings.PAI_SCHEDULER_LEASE_SECONDS)
HOLDER_MAX = SchedulerLease._meta.get_field("holder").max_length or 128


@dataclass(frozen=True)
class Holder:
    """A process as its lease names it: `host:pid:nonce:place:started`."""

    host: str
    pid: int
    nonce: str  # (two holders of one process, as tests make, are two)
    place: str  # where `pid` names this process: this boot of the kernel and pid namespace, hashed
    started: int  # the process's start, in clock ticks after boot

    def __str__(self) -> str:
        rest = f":{self.pid}:{self.nonce}:{self.place}:{self.started}"
        return self.host[: HOLDER_MAX - len(rest)] + rest

    @classmethod
    def parse(cls, text: str) -> Holder | None:
        """None for a name that is no process's (`runscheduler --id`'s)."""
        parts = text.rsplit(":", 4)
        if len(parts) != 5 or not parts[1].isdigit() or not parts[4].isdigit():
            return None
        return cls(parts[0], int(parts[1]), parts[2], parts[3], int(parts[4]))

    @classmethod
    def of(cls, pid: int) -> Holder:
        """The process `pid` of this machine (place '' where /proc cannot say: it is never taken
        for ended)."""
        host = settings.PAI_MACHINE_NAME or socket.gethostname()
        return cls(host, pid, uuid.uuid4().hex[:6], _this_place(), _start_of(pid) or 0)

    @classmethod
    def here(cls) -> Holder:
        return cls.of(os.getpid())

    def has_ended(self) -> bool:
        """True for a process of this machine that has ended (or whose pid is now another's); a
        process elsewhere, or one this machine cannot tell about, has not."""
        if not self.place or self.place != _this_place():
            return False
        try:
            os.kill(self.pid, 0)
        except ProcessLookupError:
            return True
        except PermissionError:
            pass  # another user's: /proc tells whether it is the holder
        state = _stat(self.pid)
        if state is None:
            return False
        return state[0] in "ZX" or state[1] != self.started  # a zombie is dead; a later start, another process


def _this_place() -> str:
    return _place(settings.PAI_MACHINE_NAME)


@cache
def _place(machine: str) -> str:
    try:
        boot = Path("/proc/sys/kernel/random/boot_id").read_text().strip()
        pid_namespace = os.readlink("/proc/self/ns/pid")
    except OSError:
        return ""
    named = f" {machine}" if machine else ""  # (unnamed, as before: a restart after an upgrade takes over at once)
    return hashlib.sha256(f"{boot} {pid_namespace}{named}".encode()).hexdigest()[:12]


def _stat(pid: int) -> tuple[str, int] | None:
    """The process's state letter and start time (proc(5): fields 3 and 22), None when unreadable."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
        fields = text[text.rindex(")") + 2 :].split()
        return fields[0], int(fields[19])
    except (OSError, ValueError, IndexError):
        return None


def _start_of(pid: int) -> int | None:
    state = _stat(pid)
    return None if state is None else state[1]


class Lease:
    """The lease row `name`, held for `ttl` after each renewal (the scheduler's by default)."""

    def __init__(self, holder: Holder | str, name: str = LEASE_NAME, ttl: timedelta = LEASE_TTL) -> None:
        self.holder = str(holder)
        self.name = name
        self.ttl = ttl
        self._row_exists = False
        self._renewed_at = float("-inf")  # monotonic seconds of the last renewal that held

    def take(self) -> bool:
        """True while this process holds the lease. A lease renewed less than a third of its ttl
        ago is still ours (no one may take it before it expires): no write on every pass."""
        if time.monotonic() - self._renewed_at < self.ttl.total_seconds() / 3:
            return True
        renewing_at = time.monotonic()
        if not self._row_exists:
            with contextlib.suppress(IntegrityError):  # created by the other process at the same moment
                SchedulerLease.objects.get_or_create(name=self.name)
            self._row_exists = True
        free = Q(holder=self.holder) | Q(holder="") | Q(expires_at__isnull=True) | Q(expires_at__lt=Now())
        taken = self._take(free) or self._take_from_ended()
        self._renewed_at = renewing_at if taken else float("-inf")
        return taken

    def _take_from_ended(self) -> bool:
        """The lease of a process of this machine that has ended, at once (its name is the UPDATE's
        condition: of two processes restarted at once, one takes it)."""
        held_by = SchedulerLease.objects.filter(name=self.name).values_list("holder", flat=True).first() or ""
        holder = Holder.parse(held_by)
        if holder is None or not holder.has_ended() or not self._take(Q(holder=held_by)):
            return False
        log.info("%s took the lease %s of %s at once: its process has ended", self.holder, self.name, held_by)
        return True

    def _take(self, condition: Q) -> bool:
        rows = SchedulerLease.objects.filter(condition, name=self.name)
        expires_at = ExpressionWrapper(Now() + Value(self.ttl), output_field=DateTimeField())
        return rows.update(holder=self.holder, expires_at=expires_at) == 1

    def release(self) -> None:
        self._renewed_at = float("-inf")
        SchedulerLease.objects.filter(name=self.name, holder=self.holder).update(holder="", expires_at=None)
