"""The webhooks' sender: a thread of `runsampler` that posts what is due every OUTBOX_S seconds
while that process holds the sampler's lease (one sender at a time), off every scheduler pass."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

from django.db import close_old_connections

from jobs.webhooks import deliver_due

log = logging.getLogger("pai.webhooks")

OUTBOX_S = 1.0


def send_webhooks(stop: threading.Event, active: Callable[[], bool]) -> None:
    while not stop.is_set():
        try:
            if active():
                deliver_due()
        except Exception:
            log.exception("sending webhooks failed; trying again")
        finally:
            close_old_connections()
        stop.wait(OUTBOX_S)
