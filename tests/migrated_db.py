"""The SQLite test database, migrated once per set of migrations: running the ~70 migrations cost
each worker of each run ~2 s of CPU (Django rendering each step's model states) before its first
test. The file they leave, its cache table made too, is kept in var/cache/ under a digest of every
app's migration files and of what else shapes it (the Django version, the caches, the user model);
a test session whose digest has a file copies it instead of migrating. The sessions that start
together (xdist's workers) take turns: the first to find no file migrates and keeps one, the others
wait for it and copy (before, each worker of a cold run migrated, ~4 s of CPU each under load)."""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import os
import shutil
import sqlite3
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any
from unittest import mock

import django
from django.apps import apps
from django.conf import settings
from django.db.backends.sqlite3.creation import DatabaseCreation

PREFIX = "migrated-test-db-"


def digest() -> str:
    parts = [django.get_version(), repr(settings.CACHES), settings.AUTH_USER_MODEL, repr(settings.MIGRATION_MODULES)]
    found = hashlib.sha256("\n".join(parts).encode())
    for config in sorted(apps.get_app_configs(), key=lambda config: config.label):
        for path in sorted((Path(config.path) / "migrations").glob("*.py")):
            found.update(f"{config.label}/{path.name}\n".encode())
            found.update(path.read_bytes())
    return found.hexdigest()[:20]


def keep(database: str, template: Path) -> None:
    """A consistent copy (its write-ahead log included) under the template's name, whole or not at all."""
    partial = template.with_name(f"{template.name}.{os.getpid()}")
    with contextlib.closing(sqlite3.connect(database)) as source, contextlib.closing(sqlite3.connect(partial)) as copy:
        source.backup(copy)
    os.replace(partial, template)
    for stale in template.parent.glob(f"{PREFIX}*.sqlite3"):
        if stale != template:
            stale.unlink(missing_ok=True)


@contextlib.contextmanager
def taking_turns(lock: Path) -> Iterator[None]:
    """One test session at a time on this box past this point (an advisory lock on a file)."""
    with open(lock, "a") as held:
        fcntl.flock(held, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(held, fcntl.LOCK_UN)


def from_template(create: Callable[..., str]) -> Callable[..., str]:
    def create_test_db(
        self: DatabaseCreation,
        verbosity: int = 1,
        autoclobber: bool = False,
        serialize: bool = True,
        keepdb: bool = False,
    ) -> str:
        name = self._get_test_db_name()  # type: ignore[attr-defined]
        if keepdb or self.is_in_memory_db(name):
            return create(self, verbosity, autoclobber, serialize, keepdb)
        template = settings.VAR_DIR / "cache" / f"{PREFIX}{digest()}.sqlite3"
        for stale in (name, f"{name}-wal", f"{name}-shm"):
            Path(stale).unlink(missing_ok=True)
        template.parent.mkdir(parents=True, exist_ok=True)
        with taking_turns(template.parent / "migrated-test-db.lock"):
            try:
                shutil.copyfile(template, name)
            except FileNotFoundError:  # (none yet, or another session's new digest replaced it)
                name = create(self, verbosity, autoclobber, serialize, keepdb)
                keep(name, template)
                return name
        # What create_test_db does after its migrate (and its createcachetable, in the copy too).
        self.connection.close()
        settings.DATABASES[self.connection.alias]["NAME"] = name
        self.connection.settings_dict["NAME"] = name
        if serialize:
            self.connection._test_serialized_contents = self.serialize_db_to_string()  # type: ignore[attr-defined]
        self.connection.ensure_connection()
        return name

    return create_test_db


def with_its_log(destroy: Callable[..., None]) -> Callable[..., None]:
    """Django removes the test database's file, not its write-ahead log and shared memory index
    (`-wal`, `-shm`): each run left two files per worker in var/."""

    def destroy_test_db(self: DatabaseCreation, test_database_name: str, verbosity: int) -> None:
        destroy(self, test_database_name, verbosity)
        if not self.is_in_memory_db(test_database_name):
            for companion in (f"{test_database_name}-wal", f"{test_database_name}-shm"):
                Path(companion).unlink(missing_ok=True)

    return destroy_test_db


@contextlib.contextmanager
def migrated_once() -> Iterator[Any]:
    with (
        mock.patch.object(DatabaseCreation, "create_test_db", from_template(DatabaseCreation.create_test_db)),
        mock.patch.object(
            DatabaseCreation,
            "_destroy_test_db",
            with_its_log(DatabaseCreation._destroy_test_db),  # type: ignore[attr-defined]
        ),
    ):
        yield
