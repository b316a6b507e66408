"""A PostgreSQL database of a bench run's own (the local server CI and DESIGN.md's recipe start)."""

from __future__ import annotations

import contextlib
import os
import sys
import uuid
from collections.abc import Iterator

ADMIN_URL = "postgresql://postgres@127.0.0.1:5432/postgres"


@contextlib.contextmanager
def own_database(prefix: str) -> Iterator[str]:
    """Creates `<prefix>_<random>`, sets DATABASE_URL to it while the block runs and drops it after,
    Django's connections closed first (WITH (FORCE) ends the bench's other processes' sessions)."""
    import psycopg

    name = f"{prefix}_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(ADMIN_URL, autocommit=True) as admin:
        admin.execute(f"CREATE DATABASE {name}")
    url = f"postgres://postgres@127.0.0.1:5432/{name}"
    previous = os.environ.get("DATABASE_URL")
    os.environ["DATABASE_URL"] = url
    try:
        yield url
    finally:
        if "django.db" in sys.modules:
            from django.db import connections

            connections.close_all()
        if previous is None:
            os.environ.pop("DATABASE_URL", None)
        else:
            os.environ["DATABASE_URL"] = previous
        with psycopg.connect(ADMIN_URL, autocommit=True) as admin:
            admin.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")
