"""python manage.py submitjob PATH --user NAME: validate a job config and create the job (WAITING)
through jobs.submit, the same verb the pages and the API use. Prints `<user>~<name>`; a config
with `extras.sweep` makes a sweep and prints each run's."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandParser

from jobs.management.commands.validatejob import find_user, read_config_text, write_errors
from jobs.models import Sweep
from jobs.protocol import JobConfigError
from jobs.submit import submit
from jobs.sweeps import runs


class Command(BaseCommand):
    help = "Submit a job config (v1 JSON or v2 YAML) as a user; prints the job's full name."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("path", help="config file, or - for stdin")
        parser.add_argument("--user", required=True, help="the job's owner")

    def handle(self, *args: Any, **options: Any) -> None:
        try:
            text = read_config_text(options["path"])  # (unreadable, too big: a refusal, no traceback)
            made = submit(find_user(options["user"]), text)
        except JobConfigError as error:
            write_errors(error, self.stderr)
            raise SystemExit(1) from None
        except Exception as error:
            if not type(error).__module__.startswith("jobs."):
                raise  # a bug, not a refusal: keep the traceback
            self.stderr.write(str(error))
            raise SystemExit(1) from None
        for job in runs(made) if isinstance(made, Sweep) else [made]:
            self.stdout.write(job.full_name)
