"""python manage.py statediagram [--write]: the job and task state diagram, drawn from the data in
jobs/states.py. --write puts it into docs/architecture.md between its markers (a test fails
while the two differ)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser

from jobs.states import state_diagram

BEGIN = "<!-- statediagram: drawn by `manage.py statediagram --write` from jobs/states.py; do not edit -->"
END = "<!-- /statediagram -->"


def architecture_doc() -> Path:
    return Path(settings.BASE_DIR) / "docs" / "architecture.md"


def with_diagram(doc: str) -> str:
    """The doc with today's diagram between its markers (a ValueError if they are missing)."""
    head, begin, rest = doc.partition(BEGIN)
    _, end, tail = rest.partition(END)
    if not begin or not end:
        raise ValueError(f"the doc has no {BEGIN} ... {END} markers")
    return f"{head}{BEGIN}\n```\n{state_diagram()}```\n{END}{tail}"


class Command(BaseCommand):
    help = "Print the job and task state diagram (jobs/states.py); --write puts it into docs/architecture.md."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--write", action="store_true", help="update docs/architecture.md between its markers")

    def handle(self, *args: Any, **options: Any) -> None:
        if not options["write"]:
            self.stdout.write(state_diagram(), ending="")
            return
        path = architecture_doc()
        try:
            path.write_text(with_diagram(path.read_text()))
        except ValueError as error:
            raise CommandError(f"{path}: {error}") from None
