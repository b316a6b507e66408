"""`python manage.py runscheduler [--once]`: the long-running scheduler loop."""

import time

from django.core.management.base import BaseCommand

from scheduling.lease import LEASE_TTL
from scheduling.scheduler import Scheduler


class Command(BaseCommand):
    help = "Place waiting jobs, start and watch their tasks, apply retries and completion (SIGTERM: finish the pass)."

    def add_arguments(self, parser):
        parser.add_argument("--once", action="store_true", help="run one pass and exit (tests, cron)")
        parser.add_argument("--interval", type=float, default=None, help="seconds to sleep when idle")
        parser.add_argument(
            "--id",
            default=None,
            help="a stable scheduler id: restarted with the same id, anywhere, it takes its lease back at "
            "once (default: this process, whose lease a scheduler restarted on the same machine takes at "
            "once when the process has ended; one on another machine waits for it to expire)",
        )

    def handle(self, *args, **options):
        scheduler = Scheduler(holder=options["id"])
        if not options["once"]:
            scheduler.run_forever(options["interval"])
            return
        # One pass; if another scheduler holds the lease, wait for it (up to one lease period).
        deadline = time.monotonic() + LEASE_TTL.total_seconds() + 5
        while not scheduler.take_lease():
            if time.monotonic() > deadline:
                self.stderr.write("another scheduler holds the lease; nothing done")
                return
            time.sleep(0.1)
        try:
            scheduler.run_once()
        finally:
            scheduler.release_lease()
