"""A process-node job is tried as an attacker would: the portal's files, other users' areas and the
portal's processes are out of its reach; its own work dir and storage area are not."""

import json
import os

import pytest
from django.conf import settings
from django.db import connection

from jobs.models import JobState
from tests.scheduler.conftest import v2_job


def attack(name: str, steps: dict[str, str]) -> str:
    """A job whose one task runs each step and prints `<step>: REACHED` or `<step>: refused`."""
    commands = [
        f"if {command} ; then echo '{step}: REACHED'; else echo '{step}: refused'; fi"
        for step, command in steps.items()
    ]
    role = {
        "attacker": {
            "instances": 1,
            "dockerImage": "image",
            "resourcePerInstance": {"cpu": 1, "memoryMB": 256, "gpu": 0},
            "commands": commands,
        }
    }
    return v2_job(name, "".join(f"  {line}\n" for line in json.dumps(role, indent=1).splitlines()))


# What bob's job did to the portal's database before the sandbox: make every user an admin.
PROMOTE_ALL = (
    "import sqlite3; db = sqlite3.connect('file:{database}?mode=rw', uri=True); "
    "db.execute('update auth_user set is_staff=1, is_superuser=1'); db.commit()"
)


@pytest.fixture
def bobs_area(other_user, process_node):
    area = settings.PAI_FS_ROOT / other_user.username
    area.mkdir(parents=True)
    (area / "notes.txt").write_text("bob's private notes")
    return area


@pytest.fixture
def run_attack(submit, run_until):
    def run(steps: dict[str, str]) -> str:
        job = run_until(submit(attack("attack", steps)), JobState.SUCCEEDED, JobState.FAILED)
        return open(job.tasks.get().log_path).read()

    return run


def test_it_keeps_the_database_out_of_reach(run_attack, user, django_user_model):
    if connection.vendor != "sqlite":
        pytest.skip("the database is a file of the portal's only on SQLite")
    database = connection.settings_dict["NAME"]
    escape = "$PAI_WORK_DIR/" + "../" * (len(settings.PAI_WORK_ROOT.parts) + 3) + database.lstrip("/")
    log = run_attack(
        {
            "read": f"head -c 16 {database} | grep -q SQLite",
            "read-by-relative-path": f"head -c 16 {escape} | grep -q SQLite",
            "promote": f"python3 -c {json.dumps(PROMOTE_ALL.format(database=database))}",
        }
    )
    assert log.count(": refused") == 3, log
    assert not django_user_model.objects.filter(is_staff=True).exists()


def test_it_keeps_the_secret_key_out_of_reach(run_attack):
    log = run_attack({"read": f"cat {settings.VAR_DIR / 'secret_key'}", "list": f"ls {settings.VAR_DIR} | grep -q ."})
    assert log.count(": refused") == 2, log


def test_it_keeps_another_users_storage_area_out_of_reach(run_attack, bobs_area):
    log = run_attack({"read": f"cat {bobs_area / 'notes.txt'}", "list": f"ls {bobs_area.parent} | grep -q bob"})
    assert log.count(": refused") == 2, log
    assert "private notes" not in log


def test_it_keeps_the_portals_processes_out_of_reach(run_attack):
    log = run_attack(
        {"see": f"test -d /proc/{os.getpid()}", "signal": f"kill -0 {os.getpid()}", "stop": f"kill -STOP {os.getpid()}"}
    )
    assert log.count(": refused") == 3, log


def test_it_runs_the_task_as_an_unprivileged_user(run_attack):
    log = run_attack({"root": 'test "$(id -u)" = 0', "capabilities": "grep -q 'CapEff:.*[1-9a-f]' /proc/self/status"})
    assert log.count(": refused") == 2, log


def test_it_lets_the_task_use_its_work_dir_and_its_own_area(run_attack, user):
    log = run_attack(
        {"work-dir": "echo x > $PAI_WORK_DIR/scratch", "own-area": "echo result > $PAI_DEFAULT_FS_URI/result.txt"}
    )
    assert log.count(": REACHED") == 2, log
    assert (settings.PAI_FS_ROOT / user.username / "result.txt").read_text() == "result\n"
