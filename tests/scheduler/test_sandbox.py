"""A process-node job is tried as an attacker would: the portal's files, other users' areas and the
portal's processes are out of its reach; its own work dir and storage area are not."""

import json
import os
import re

import pytest
from django.conf import settings
from django.db import connection

from jobs.models import JobState
from tests.conftest import shared_in_module
from tests.scheduler.conftest import v2_job

pytestmark = pytest.mark.django_db


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


def attack_steps(database: str, bobs_area, portal_pid: int) -> dict[str, str]:
    """Every step of this file's attack, named `<what it tries to reach>/<how>`."""
    escape = "$PAI_WORK_DIR/" + "../" * (len(settings.PAI_WORK_ROOT.parts) + 3) + database.lstrip("/")
    steps = {
        "secret-key/read": f"cat {settings.VAR_DIR / 'secret_key'}",
        "secret-key/list": f"ls {settings.VAR_DIR} | grep -q .",
        "bobs-area/read": f"cat {bobs_area / 'notes.txt'}",
        "bobs-area/list": f"ls {bobs_area.parent} | grep -q bob",
        "portal-process/see": f"test -d /proc/{portal_pid}",
        "portal-process/signal": f"kill -0 {portal_pid}",
        "portal-process/stop": f"kill -STOP {portal_pid}",
        "privilege/root": 'test "$(id -u)" = 0',
        "privilege/capabilities": "grep -q 'CapEff:.*[1-9a-f]' /proc/self/status",
        "own/work-dir": "echo x > $PAI_WORK_DIR/scratch",
        "own/area": "echo result > $PAI_DEFAULT_FS_URI/result.txt",
    }
    if connection.vendor == "sqlite":  # (the database is a file of the portal's only on SQLite)
        steps["database/read"] = f"head -c 16 {database} | grep -q SQLite"
        steps["database/read-by-relative-path"] = f"head -c 16 {escape} | grep -q SQLite"
        steps["database/promote"] = f"python3 -c {json.dumps(PROMOTE_ALL.format(database=database))}"
    return steps


@pytest.fixture
def attacked(submit, run_until, user, bobs_area, django_user_model) -> dict[str, object]:
    """One real job that tries every step, and what it left: its log, whether anyone became an
    admin, what it wrote in its owner's area. Every test here reads its own steps of it."""
    steps = attack_steps(connection.settings_dict["NAME"], bobs_area, os.getpid())
    job = run_until(submit(attack("attack", steps)), JobState.SUCCEEDED, JobState.FAILED)
    result = settings.PAI_FS_ROOT / user.username / "result.txt"
    return {
        "log": open(job.tasks.get().log_path).read(),
        "admins": django_user_model.objects.filter(is_staff=True).exists(),
        "own area": result.read_text() if result.exists() else None,
    }


# One attack for the module (per worker), as each test's own (a task of its own, its own steps) took one each.
attack_run = shared_in_module("attacked")


def said(log: str, target: str) -> dict[str, str]:
    """What the attack's steps on `target` printed: {how: 'REACHED' or 'refused'}. Searched, not
    read line by line: a step's own error (stderr) may end up around its verdict's line in the log."""
    return dict(re.findall(rf"{target}/([\w-]+): (REACHED|refused)", log))


def test_it_keeps_the_database_out_of_reach(attack_run):
    if connection.vendor != "sqlite":
        pytest.skip("the database is a file of the portal's only on SQLite")
    log = attack_run["log"]
    assert said(log, "database") == dict.fromkeys(["read", "read-by-relative-path", "promote"], "refused"), log
    assert not attack_run["admins"]


def test_it_keeps_the_secret_key_out_of_reach(attack_run):
    log = attack_run["log"]
    assert said(log, "secret-key") == dict.fromkeys(["read", "list"], "refused"), log


def test_it_keeps_another_users_storage_area_out_of_reach(attack_run):
    log = attack_run["log"]
    assert said(log, "bobs-area") == dict.fromkeys(["read", "list"], "refused"), log
    assert "private notes" not in log


def test_it_keeps_the_portals_processes_out_of_reach(attack_run):
    log = attack_run["log"]
    assert said(log, "portal-process") == dict.fromkeys(["see", "signal", "stop"], "refused"), log


def test_it_runs_the_task_as_an_unprivileged_user(attack_run):
    log = attack_run["log"]
    assert said(log, "privilege") == dict.fromkeys(["root", "capabilities"], "refused"), log


def test_it_lets_the_task_use_its_work_dir_and_its_own_area(attack_run):
    log = attack_run["log"]
    assert said(log, "own") == dict.fromkeys(["work-dir", "area"], "REACHED"), log
    assert attack_run["own area"] == "result\n"
