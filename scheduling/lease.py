"""The scheduler lease: one active scheduler at a time. A second one waits until the holder's lease
expires (it died) or is released (it stopped)."""

from __future__ import annotations

import contextlib
import time
from datetime import timedelta

from django.db import IntegrityError
from django.db.models import Q
from django.utils import timezone

from clusters.models import SchedulerLease

LEASE_NAME = "main"
LEASE_TTL = timedelta(seconds=15)
LEASE_RENEW_AFTER = LEASE_TTL / 3


class Lease:
    def __init__(self, holder: str) -> None:
        self.holder = holder
        self._row_exists = False
        self._renewed_at = float("-inf")  # monotonic seconds of the last renewal that held

    def take(self) -> bool:
        """True while this scheduler holds the lease. A lease renewed less than LEASE_RENEW_AFTER
        ago is still ours (no one may take it before it expires): no write on every pass."""
        if time.monotonic() - self._renewed_at < LEASE_RENEW_AFTER.total_seconds():
            return True
        renewing_at = time.monotonic()
        now = timezone.now()
        if not self._row_exists:
            with contextlib.suppress(IntegrityError):  # created by the other scheduler at the same moment
                SchedulerLease.objects.get_or_create(name=LEASE_NAME)
            self._row_exists = True
        taken = (
            SchedulerLease.objects.filter(name=LEASE_NAME)
            .filter(Q(holder=self.holder) | Q(holder="") | Q(expires_at__isnull=True) | Q(expires_at__lt=now))
            .update(holder=self.holder, expires_at=now + LEASE_TTL)
        )
        self._renewed_at = renewing_at if taken == 1 else float("-inf")
        return taken == 1

    def release(self) -> None:
        self._renewed_at = float("-inf")
        SchedulerLease.objects.filter(name=LEASE_NAME, holder=self.holder).update(holder="", expires_at=None)
