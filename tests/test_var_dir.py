"""What the portal keeps in var/ is its own (issue 27): after a fresh setup and a failed sign-in,
nothing private is readable or writable by group or others, var/ and the roots tasks pass through
are traversable only, and no cache the portal unpickles lives in a file under var/."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
# The process sandbox (the task's own uid) passes through these to its work dir and the user's area.
TRAVERSABLE = {"", "work", "fs"}

# Three Django processes and a migrate on a fresh database: about 5 s of CPU, a tenth of the fast tier.
# db_agnostic: it sets up its own SQLite var/ whatever database the suite runs on (DATABASE_URL left
# out below), so CI's PostgreSQL run would repeat the SQLite run's proof.
pytestmark = [pytest.mark.slow, pytest.mark.db_agnostic]


@pytest.fixture(scope="module")
def set_up_var_dir(tmp_path_factory) -> Path:
    var_dir = tmp_path_factory.mktemp("var")
    # The default set-up's own files (SQLite in var/), whatever database the suite runs on.
    left_out = ("DJANGO_ALLOW_ASYNC_UNSAFE", "SECRET_KEY", "REDIS_URL", "DATABASE_URL")
    env = {
        **{k: v for k, v in os.environ.items() if k not in left_out},
        "PAI_VAR_DIR": str(var_dir),
    }
    for command in (
        ["migrate", "--noinput", "-v0"],
        ["bootstrap"],
        ["shell", "-c", "from django.test import Client; Client(HTTP_HOST='127.0.0.1').post('/login/', "
         "{'username': 'admin', 'password': 'wrong'})"],
    ):  # fmt: skip
        subprocess.run([sys.executable, "manage.py", *command], cwd=ROOT, env=env, check=True, capture_output=True)
    return var_dir


def test_it_keeps_everything_private_under_var_to_the_portal(set_up_var_dir):
    exposed = []
    for path in [set_up_var_dir, *set_up_var_dir.rglob("*")]:
        info = path.lstat()
        relative = path.relative_to(set_up_var_dir).as_posix().removeprefix(".")
        allowed = 0o011 if relative in TRAVERSABLE and stat.S_ISDIR(info.st_mode) else 0
        if info.st_mode & 0o077 & ~allowed or info.st_uid != os.geteuid():
            exposed.append(f"{relative or 'var/'} {stat.filemode(info.st_mode)} uid {info.st_uid}")
    assert exposed == []


def test_it_keeps_the_throttle_counters_in_the_database_not_in_files(set_up_var_dir):
    import sqlite3

    assert not (set_up_var_dir / "django-cache").exists()
    with sqlite3.connect(set_up_var_dir / "db.sqlite3") as db:
        keys = [key for (key,) in db.execute("SELECT cache_key FROM pai_cache")]
    assert any("throttle_login" in key for key in keys)
