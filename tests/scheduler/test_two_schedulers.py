"""Two `runscheduler --once` processes on the same waiting jobs start no task twice."""

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from django.db import connection

from clusters.models import Node
from jobs.actions import submit_job
from jobs.models import Job, JobState
from tests.scheduler.conftest import role, v2_job

ROOT = Path(__file__).resolve().parents[2]


def database_env() -> dict[str, str]:
    """Point a subprocess at the test database this test runs on."""
    db = connection.settings_dict
    if connection.vendor == "sqlite":
        return {"PAI_SQLITE_PATH": str(db["NAME"])}
    host, port, user = db.get("HOST") or "127.0.0.1", db.get("PORT") or 5432, db.get("USER") or "postgres"
    return {"DATABASE_URL": f"postgres://{user}@{host}:{port}/{db['NAME']}"}


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_it_starts_no_task_twice_with_two_schedulers(user, default_vc, tmp_path):
    Node.objects.create(name="local", executor="process", cpus=16, memory_mb=32768)
    # Each start appends a line to a file in the owner's storage area (what a sandboxed task may write).
    marks = tmp_path / "fs" / user.username / "marks"
    start_mark = "mkdir -p $PAI_DEFAULT_FS_URI/marks"
    mark = "echo started >> $PAI_DEFAULT_FS_URI/marks/$PAI_JOB_NAME-$PAI_CURRENT_TASK_ROLE_CURRENT_TASK_INDEX"
    jobs = [
        submit_job(user, v2_job(f"race-{i}", role("worker", f"{start_mark}; {mark}; sleep 0.2", 2))) for i in range(6)
    ]
    env = {
        **os.environ,
        **database_env(),
        "PAI_WORK_ROOT": str(tmp_path / "work"),
        "PAI_LOG_DIR": str(tmp_path / "logs"),
        "PAI_FS_ROOT": str(tmp_path / "fs"),
        "PAI_LOG_LEVEL": "WARNING",
    }
    command = [sys.executable, "manage.py", "runscheduler", "--once"]
    procs = [subprocess.Popen(command, cwd=ROOT, env=env) for _ in range(2)]
    assert [p.wait(timeout=60) for p in procs] == [0, 0]

    deadline = time.monotonic() + 30
    while Job.objects.exclude(state=JobState.SUCCEEDED).exists() and time.monotonic() < deadline:
        subprocess.run(command, cwd=ROOT, env=env, check=True, timeout=60)
    assert not Job.objects.exclude(state=JobState.SUCCEEDED).exists()
    started = {path.name: path.read_text() for path in marks.iterdir()}
    assert started == {f"race-{i}-{index}": "started\n" for i in range(6) for index in range(2)}
    assert all(t.attempt == 1 for job in jobs for t in job.tasks.all())
