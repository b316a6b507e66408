"""`python manage.py runsampler [--once]`: the resource sampler (scheduling.sampler), a process of
its own beside `runscheduler`."""

import os
import signal
import socket
import threading
from typing import Any

from django.core.management.base import BaseCommand

from scheduling.sampler import Sampler, release_lease, take_lease


class Command(BaseCommand):
    help = "Sample running tasks' CPU, memory, I/O and GPUs every PAI_SAMPLE_SECONDS (SIGTERM: stop)."

    def add_arguments(self, parser):
        parser.add_argument("--once", action="store_true", help="one sampling round, then exit")

    def handle(self, *args, **options):
        holder = f"{socket.gethostname()}:{os.getpid()}"
        sampler = Sampler(active=lambda: take_lease(holder))
        if options["once"]:
            self.stdout.write(f"{sampler.sample_once()} samples stored")
            return
        stop = threading.Event()

        def finish(signum: int, frame: Any) -> None:
            stop.set()

        signal.signal(signal.SIGTERM, finish)
        signal.signal(signal.SIGINT, finish)
        try:
            sampler.run(stop)
        finally:
            release_lease(holder)
