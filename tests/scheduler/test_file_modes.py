"""What the portal writes is its own: 0600 files and 0700 directories, none readable by other users."""

import stat
from pathlib import Path

import pytest
from django.conf import settings
from django.db import connection

from clusters.job_files import task_work_dir
from jobs.actions import submit_job
from jobs.models import JobState
from jobs.storage import areas as storage
from tests.factories import v2_yaml


def mode(path) -> int:
    return stat.S_IMODE(Path(path).stat().st_mode)


def test_it_keeps_the_secret_key_private():
    assert mode(settings.VAR_DIR / "secret_key") == 0o600


def test_it_lets_no_one_else_list_or_read_var():
    assert mode(settings.VAR_DIR) & 0o066 == 0


@pytest.mark.django_db
def test_it_creates_the_database_file_private():
    if connection.vendor != "sqlite":
        pytest.skip("the database is a file of the portal's only on SQLite")
    assert mode(connection.settings_dict["NAME"]) == 0o600


@pytest.mark.django_db
def test_it_creates_storage_areas_private(settings, tmp_path):
    settings.PAI_FS_ROOT = tmp_path / "fs"
    assert mode(storage.user_area("alice")) == 0o700
    assert mode(storage.save_file("alice", "data/notes.txt", [b"private"])) == 0o600


@pytest.mark.django_db
def test_it_makes_an_area_from_before_private(settings, tmp_path):
    settings.PAI_FS_ROOT = tmp_path / "fs"
    (tmp_path / "fs" / "alice").mkdir(parents=True, mode=0o755)
    (tmp_path / "fs" / "alice").chmod(0o755)
    assert mode(storage.user_area("alice")) == 0o700


def test_it_writes_a_tasks_log_and_work_dir_private(user, process_node, run_until):
    job = run_until(submit_job(user, v2_yaml("modes", "echo hi > $PAI_WORK_DIR/out")), JobState.SUCCEEDED)
    task = job.tasks.get()
    assert mode(task.log_path) == 0o600
    work_dir = task_work_dir(job.pk, "worker", 0)
    assert mode(work_dir) == 0o700
    assert mode(work_dir / "out") & 0o077 == 0
