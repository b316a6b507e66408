"""python manage.py validatejob PATH|- [--json] [--user NAME]: check a job config.

Valid: exit 0 and the normalized v2 YAML (or {"valid": true, "spec": ...}) on stdout.
Invalid: exit 1 and one `field.path: message` line per error on stderr
(or {"valid": false, "errors": [...]} on stdout). Secrets are masked either way.
"""

from __future__ import annotations

import json
import os
import sys
from typing import Any

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandParser, OutputWrapper

from catalogue import Message
from jobs.actions import check_task_counts, validate_for_user
from jobs.protocol import MAX_BYTES, JobConfigError, LoadedConfig, export, format_error, load
from jobs.protocol.parsing import decode, too_big_error


def read_config_text(path: str) -> str:
    """The config text of a file (or stdin for "-"); unreadable, oversized or non-UTF-8 input is a
    JobConfigError, never a traceback."""
    try:
        if path == "-":
            data = sys.stdin.buffer.read(MAX_BYTES + 1)
            size = len(data)
        else:
            with open(path, "rb") as handle:
                data = handle.read(MAX_BYTES + 1)
                size = os.fstat(handle.fileno()).st_size
    except OSError as exc:
        raise JobConfigError(
            [("", Message.of("config.cannot_read", path=path, why=str(exc.strerror or exc)))]
        ) from None
    if len(data) > MAX_BYTES:
        raise too_big_error(max(size, len(data)))
    return decode(data)


def write_errors(error: JobConfigError, stream: OutputWrapper) -> None:
    for field, message in error.errors:
        stream.write(format_error(field, message))


def find_user(name: str) -> Any:
    user = get_user_model().objects.filter(username=name).first()
    if user is None:
        raise JobConfigError([("", Message.of("config.no_user", name=name))])
    return user


def validate(text: str, username: str | None) -> LoadedConfig:
    """The protocol's checks, plus the database's (VC exists and is open to the user, GPU type
    exists, paths) through jobs.actions when a user is given."""
    if username is None:
        config = load(text)
        check_task_counts(config)
        return config
    user = find_user(username)
    return validate_for_user(user, text).config


class Command(BaseCommand):
    help = "Validate a job config (v1 JSON or v2 YAML) and print it as normalized v2 YAML."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("path", help="config file, or - for stdin")
        parser.add_argument("--json", action="store_true", help="print the result as JSON on stdout")
        parser.add_argument("--user", help="also run the checks that need the database, as this user")

    def handle(self, *args: Any, **options: Any) -> None:
        try:
            config = validate(read_config_text(options["path"]), options["user"])
        except JobConfigError as error:
            if options["json"]:
                self.stdout.write(json.dumps({"valid": False, "errors": error.as_dicts()}, ensure_ascii=False))
            else:
                write_errors(error, self.stderr)
            raise SystemExit(1) from None
        if options["json"]:
            self.stdout.write(json.dumps({"valid": True, "spec": config.spec}, ensure_ascii=False))
        else:
            self.stdout.write(export(config.spec), ending="")
