"""Users' changes heard by a scheduler on another machine than the web: PostgreSQL's NOTIFY.

A submit, stop or restart rings the scheduler's bell through a socket in PAI_WORK_ROOT
(jobs.wake), which only a process on the same machine can hear. On PostgreSQL the change is also
NOTIFYed once committed (jobs.wake), and the scheduler listens for it on a connection of its own
(`Notices`), which its bell watches beside its sockets (clusters.executors.bells): a standby that
took over on the other machine of a two-machine deployment starts a submitted job as soon as the
one beside the web would. A lost listening connection (a database restart, a failover) is opened
again by a later idle wait, RETRY_S apart; meanwhile the passes find the changes, as they always do.
"""

from __future__ import annotations

import logging
import time
from typing import Any

import psycopg
from django.db import connection

from clusters.executors.bells import CHANGES, LOST, QUIET, RANG, Bell, Drained
from jobs.wake import CHANNEL

log = logging.getLogger("pai.scheduler")

RETRY_S = 5.0


class Notices:
    """A scheduler's LISTEN connection, watched by its bell (PostgreSQL only; `runscheduler` holds
    one while it runs, closed when it stops)."""

    def __init__(self) -> None:
        self._listening: Any = None  # a psycopg connection of its own, outside Django's
        self._watched: tuple[Bell, int] | None = None  # (the bell, the connection's descriptor)
        self._retry_at = 0.0

    def listen(self, on: Bell) -> None:
        """Listening from now on, if it is not (cheap when it is: called before each idle wait)."""
        if self._listening is None and connection.vendor == "postgresql" and time.monotonic() >= self._retry_at:
            try:
                # (not get_new_connection: it sets the Django wrapper's isolation level, or lends a pooled one)
                self._listening = psycopg.connect(**connection.get_connection_params(), autocommit=True)
                self._listening.execute(f"LISTEN {CHANNEL}")
            except psycopg.Error as exc:
                log.warning("cannot listen for users' changes (found by the passes meanwhile): %s", exc)
                self._retry_at = time.monotonic() + RETRY_S
                self.close()
                return
        if self._listening is not None and (self._watched is None or self._watched[0] is not on):
            self._unwatch()
            self._watched = (on, self._listening.fileno())
            on.watch(self._watched[1], CHANGES, self._drain)

    def _drain(self) -> Drained:
        """Takes what arrived: a notice rings (whatever else a server sends does not)."""
        notified = False
        try:
            self._listening.pgconn.consume_input()
            while self._listening.pgconn.notifies() is not None:
                notified = True
        except psycopg.Error:
            self.close()  # (listened on again by a later idle wait)
            self._retry_at = time.monotonic() + RETRY_S
            return LOST
        return RANG if notified else QUIET

    def _unwatch(self) -> None:
        if self._watched is not None:
            self._watched[0].unwatch(self._watched[1])  # (by its number, before it is closed)
            self._watched = None

    def close(self) -> None:
        self._unwatch()
        if self._listening is not None:
            self._listening.close()
        self._listening = None
