"""The outbox's sender (jobs/outbox.py): a thread of `runsampler` that hands out what is due every
OUTBOX_S seconds while that process holds the sampler's lease (one sender at a time), off every
scheduler pass. Its sends run on the sender's own pool: a destination that stalls holds up no
other, nor this loop."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

from django.db import close_old_connections, connection

from jobs.outbox import Sender

log = logging.getLogger("pai.outbox")

OUTBOX_S = 1.0


def send_notices(stop: threading.Event, active: Callable[[], bool]) -> None:
    sender = Sender()
    try:
        while not stop.is_set():
            try:
                if active():
                    sender.round()
                else:
                    sender.collect()  # (what was under way when the lease went is still written down)
            except Exception:
                log.exception("sending the outbox failed; trying again")
            finally:
                close_old_connections()
            stop.wait(OUTBOX_S)
    finally:
        sender.close()
        connection.close()  # (this thread's own)
