"""python manage.py importtemplates FILE... --user NAME [--public]: job templates from OpenPAI's
marketplace as it stored them: its marketplace-v2 YAML files (one v2 config each) and
openpaimarketplace's items (JSON: one item or a list). Each is checked as any template is; a file
that fails says why and nothing of it is saved. Prints each template saved."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml
from django.core.management.base import BaseCommand, CommandParser
from django.db import transaction

from jobs import job_templates
from jobs.management.commands.validatejob import find_user
from jobs.models import JobTemplate
from jobs.protocol import JobConfigError, format_error


class Command(BaseCommand):
    help = "Import OpenPAI marketplace job templates (marketplace-v2 YAML files, openpaimarketplace JSON items)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("paths", nargs="+", help="marketplace-v2 .yaml files or openpaimarketplace .json exports")
        parser.add_argument("--user", required=True, help="who owns the templates")
        parser.add_argument("--public", action="store_true", help="everyone may see and use them")

    def handle(self, *args: Any, **options: Any) -> None:
        owner = find_user(options["user"])
        visibility = JobTemplate.Visibility.PUBLIC if options["public"] else JobTemplate.Visibility.PRIVATE
        failed = False
        for path in options["paths"]:
            try:
                with transaction.atomic():
                    for item in _items(Path(path)):
                        template = job_templates.save(
                            owner, visibility=visibility, **job_templates.from_marketplace(item)
                        )
                        self.stdout.write(f"{path}: {template.name}")
            except JobConfigError as error:
                failed = True
                self.stderr.write(f"{path}: " + "; ".join(format_error(*e) for e in error.errors))
            except (OSError, ValueError, yaml.YAMLError) as error:
                failed = True
                self.stderr.write(f"{path}: {error}")
        if failed:
            raise SystemExit(1)


def _items(path: Path) -> list[Any]:
    text = path.read_text(encoding="utf-8")
    if path.suffix == ".json":
        data = json.loads(text)
        return data if isinstance(data, list) else [data]
    return [yaml.safe_load(text)]
