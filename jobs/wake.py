"""The scheduler told at once of a change a user made (a submit, a stop, a restart), where it runs
on this machine (clusters.executors.bells): its idle wait ends and the change is acted on within
a pass, not up to PAI_SCHEDULER_INTERVAL later. Rung once the change is committed (a pass woken
before the commit would not see it); on PostgreSQL also NOTIFYed, for a scheduler on another
machine (scheduling.notices; on SQLite there is no other machine)."""

from __future__ import annotations

import os

from django.conf import settings
from django.db import connection, transaction

from clusters.executors.rings import BELLS_DIR, ring_listeners

CHANNEL = "pai_scheduler"


def wake_scheduler() -> None:
    transaction.on_commit(_ring, robust=True)  # (a ring that fails is logged: it never fails the change)


def _ring() -> None:
    ring_listeners(os.path.join(settings.PAI_WORK_ROOT, BELLS_DIR))  # (a str where a setting says so)
    if connection.vendor == "postgresql":  # (delivered to every LISTENing scheduler: scheduling.notices)
        with connection.cursor() as cursor:
            cursor.execute(f"NOTIFY {CHANNEL}")
