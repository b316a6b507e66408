"""The scheduler's lease: one active scheduler. A scheduler restarted on the same machine takes over
at once from its predecessor whose process has ended (as the Procfile restarts it: no `--id`); a
live one there, or any on another machine, keeps the lease until it runs out."""

from __future__ import annotations

import dataclasses
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path

import pytest
from django.utils import timezone

from clusters.models import SchedulerLease
from scheduling.lease import LEASE_NAME, LEASE_TTL, Holder, Lease
from tests.processes import stop
from tests.scheduler.test_two_schedulers import database_env

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def process() -> Iterator[subprocess.Popen[bytes]]:
    """Another live process of this machine."""
    sleeper = subprocess.Popen(["sleep", "60"])
    yield sleeper
    sleeper.kill()
    sleeper.wait()


def held_by(holder: Holder | str) -> None:
    """The lease as its holder left it: renewed a moment ago."""
    SchedulerLease.objects.update_or_create(
        name=LEASE_NAME, defaults={"holder": str(holder), "expires_at": timezone.now() + LEASE_TTL}
    )


def ended(process: subprocess.Popen[bytes]) -> Holder:
    holder = Holder.of(process.pid)
    process.kill()
    process.wait()
    return holder


@pytest.mark.django_db
def test_a_restart_on_the_same_machine_takes_the_lease_of_its_ended_predecessor_at_once(process):
    held_by(ended(process))
    assert Lease(Holder.here()).take()


@pytest.mark.django_db
def test_a_predecessor_killed_but_not_yet_reaped_has_ended(process):
    holder = Holder.of(process.pid)
    process.kill()
    os.waitid(os.P_PID, process.pid, os.WEXITED | os.WNOWAIT)  # ended, and a zombie until reaped
    held_by(holder)
    assert Lease(Holder.here()).take()


@pytest.mark.django_db
def test_a_second_live_scheduler_on_the_same_machine_waits(process):
    held_by(Holder.of(process.pid))
    assert not Lease(Holder.here()).take()


@pytest.mark.django_db
def test_two_restarts_at_once_on_the_same_machine_take_the_ended_ones_lease_once(process):
    held_by(ended(process))
    first, second = Lease(Holder.here()), Lease(Holder.here())
    assert (first.take(), second.take()) == (True, False)


@pytest.mark.django_db
def test_a_pid_now_given_to_another_process_keeps_no_lease():
    """The holder's pid is live, but it is not the process that took the lease (it started later)."""
    this = Holder.of(os.getpid())
    held_by(dataclasses.replace(this, started=this.started - 1))
    assert Lease(Holder.here()).take()


@pytest.mark.django_db
def test_a_standby_on_another_machine_waits_out_the_lease(process):
    """There the pid means another process, or none: alive or not, the lease is waited out."""
    held_by(dataclasses.replace(ended(process), host="elsewhere", place="0123456789ab"))
    standby = Lease(Holder.here())
    assert not standby.take()
    SchedulerLease.objects.update(expires_at=timezone.now() - timedelta(seconds=1))
    assert standby.take()


@pytest.mark.django_db
def test_a_scheduler_named_as_another_machine_waits_out_an_ended_ones_lease(process, settings):
    """PAI_MACHINE_NAME: two processes of one box given two names are two machines' (a standby
    tried there)."""
    settings.PAI_MACHINE_NAME = "machine-a"
    held_by(ended(process))
    settings.PAI_MACHINE_NAME = "machine-b"
    assert not Lease(Holder.here()).take()


@pytest.mark.django_db
def test_a_standby_whose_clock_runs_ahead_takes_no_lease_early(monkeypatch):
    """Expiry is the database's clock: a machine's own, minutes ahead, lets it take nothing."""
    held_by("elsewhere-1")
    ahead = timezone.now() + timedelta(minutes=10)
    monkeypatch.setattr(timezone, "now", lambda: ahead)
    assert not Lease(Holder.here()).take()


@pytest.mark.django_db
def test_a_holder_named_by_an_id_waits_out_the_lease():
    """`runscheduler --id` names no process: only a scheduler restarted with that id takes it at once."""
    held_by("scheduler-1")
    assert not Lease(Holder.here()).take()
    assert Lease("scheduler-1").take()


# --- as the Procfile starts it ----------------------------------------------------------------


def lease_holder() -> str:
    return SchedulerLease.objects.filter(name=LEASE_NAME).values_list("holder", flat=True).first() or ""


def wait_for_holder(other_than: str, timeout: float = 60.0) -> str:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if (holder := lease_holder()) not in {"", other_than}:
            return holder
        time.sleep(0.05)
    raise AssertionError(f"the lease stayed {lease_holder()!r}")


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_a_scheduler_restarted_after_sigkill_as_the_procfile_starts_it_takes_over_before_the_lease_ends(tmp_path):
    env = {
        **os.environ,
        **database_env(),
        "PAI_WORK_ROOT": str(tmp_path / "work"),
        "PAI_LOG_DIR": str(tmp_path / "logs"),
        "PAI_FS_ROOT": str(tmp_path / "fs"),
        "PAI_LOG_LEVEL": "WARNING",
    }
    command = [sys.executable, "manage.py", "runscheduler"]  # the Procfile's (no --id)
    first = subprocess.Popen(command, cwd=ROOT, env=env)
    try:
        dead = wait_for_holder(other_than="")
    finally:
        first.kill()
        first.wait()
    # Its lease would last ten minutes more: only its process having ended lets the next one in.
    SchedulerLease.objects.update(expires_at=timezone.now() + timedelta(minutes=10))
    restarted = subprocess.Popen(command, cwd=ROOT, env=env)
    try:
        holder = Holder.parse(wait_for_holder(other_than=dead))
        assert holder is not None and holder.pid == restarted.pid
    finally:
        stop(restarted)
