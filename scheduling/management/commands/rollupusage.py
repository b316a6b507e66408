"""`python manage.py rollupusage [--days N]`: (re)write the daily usage rollups of the last N days
(the sampler keeps today's and yesterday's; this fills in history, e.g. after an upgrade). Sampled
use is there only for days whose samples are still kept (PAI_SAMPLE_KEEP_DAYS)."""

from datetime import UTC, timedelta

from django.core.management.base import BaseCommand
from django.utils import timezone

from scheduling.usage_rollup import roll_up


class Command(BaseCommand):
    help = "Write the daily usage rollups (the Usage page's numbers) of the last N days."

    def add_arguments(self, parser):
        parser.add_argument("--days", type=int, default=1, help="how many days back, today included")

    def handle(self, *args, **options):
        today = timezone.now().astimezone(UTC).date()
        for back in range(max(1, options["days"]) - 1, -1, -1):
            day = today - timedelta(days=back)
            self.stdout.write(f"{day}: {roll_up(day)} jobs")
