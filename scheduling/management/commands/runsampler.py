"""`python manage.py runsampler [--once]`: the resource sampler (scheduling.sampler), a process of
its own beside `runscheduler`, with the outbox's sender (scheduling.outbox: mails, webhooks) on a
thread."""

import signal
import threading
from typing import Any

from django.core.management.base import BaseCommand

from scheduling.outbox import send_notices
from scheduling.sampler import Sampler, sampler_lease


class Command(BaseCommand):
    help = "Sample running tasks' CPU, memory, I/O and GPUs every PAI_SAMPLE_SECONDS (SIGTERM: stop)."

    def add_arguments(self, parser):
        parser.add_argument("--once", action="store_true", help="one sampling round, then exit")

    def handle(self, *args, **options):
        lease = sampler_lease()  # a second runsampler waits: one sample per task and period
        holding = threading.Event()  # the lease, as the sampler last renewed it: the sender's go

        def active() -> bool:
            held = lease.take()
            holding.set() if held else holding.clear()
            return held

        sampler = Sampler(active=active)
        if options["once"]:
            self.stdout.write(f"{sampler.sample_once()} samples stored")
            return
        stop = threading.Event()

        def finish(signum: int, frame: Any) -> None:
            stop.set()

        signal.signal(signal.SIGTERM, finish)
        signal.signal(signal.SIGINT, finish)
        sender = threading.Thread(target=send_notices, args=(stop, holding.is_set), name="outbox", daemon=True)
        sender.start()
        try:
            sampler.run(stop)
        finally:
            sender.join(10)
            lease.release()
