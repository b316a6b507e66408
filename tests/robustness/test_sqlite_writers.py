"""SQLite's write transactions wait in line (pai_portal/gated_sqlite3): the next writer, of this
process or another, goes as soon as the one before lets go, a holder that dies frees the line,
and a wait has the database's timeout as its limit, past which SQLite answers as before."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from django.conf import settings
from django.contrib.auth.models import Group
from django.db import connection, transaction

from pai_portal.gated_sqlite3.writers import WritersLine, line_of, writers_file

# Django's connections take the line only on SQLite (PostgreSQL's writers wait on row locks).
on_sqlite = pytest.mark.skipif(
    settings.DATABASES["default"]["ENGINE"] != "pai_portal.gated_sqlite3", reason="SQLite's writers only"
)

HOLD = """
import fcntl, os, sys
descriptor = os.open(sys.argv[1], os.O_RDWR | os.O_CREAT)
fcntl.flock(descriptor, fcntl.LOCK_EX)
print("held", flush=True)
sys.stdin.readline()
"""


@pytest.fixture
def line(tmp_path: Path) -> WritersLine:
    return WritersLine(str(tmp_path / "db.sqlite3-writers"))


@pytest.fixture
def other_process(line: WritersLine, tmp_path: Path) -> Iterator[subprocess.Popen[str]]:
    """Another process holding the line's flock until its stdin gets a line (or it is killed)."""
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLD, str(tmp_path / "db.sqlite3-writers")],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert holder.stdout is not None and holder.stdout.readline() == "held\n"
    yield holder
    holder.kill()
    holder.wait()


def waits_until(line: WritersLine, let_go: Callable[[], object]) -> None:
    """A writer on another thread waits for its turn until `let_go()`, then gets it."""
    came: list[bool] = []
    thread = threading.Thread(target=lambda: came.append(line.enter(10)))
    thread.start()
    thread.join(0.2)
    assert came == []
    let_go()
    thread.join(5)
    assert came == [True]
    line.leave()


def tell_to_go(holder: subprocess.Popen[str]) -> None:
    assert holder.stdin is not None
    holder.stdin.write("go\n")
    holder.stdin.flush()


def test_it_gives_a_writer_its_turn_at_once_when_nobody_writes(line):
    assert line.enter(0.001)
    line.leave()
    assert line.enter(0.001)


def test_it_keeps_the_threads_of_one_process_in_line(line):
    assert line.enter(1)
    waits_until(line, line.leave)


def test_it_lets_a_writer_of_this_process_in_as_soon_as_another_process_leaves(line, other_process):
    waits_until(line, lambda: tell_to_go(other_process))


def test_it_frees_the_line_when_the_process_holding_it_is_killed(line, other_process):
    waits_until(line, lambda: other_process.send_signal(signal.SIGKILL))


def test_it_lets_a_writer_go_on_without_its_turn_once_the_timeout_passed(line, other_process):
    began = time.monotonic()
    assert not line.enter(0.2)
    assert 0.2 <= time.monotonic() - began < 2
    assert not line.turn.locked()  # the next writer of this process is not kept out


def test_it_gives_the_flock_back_when_it_comes_after_its_writer_stopped_waiting(line, other_process, tmp_path):
    assert not line.enter(0.1)
    tell_to_go(other_process)
    other_process.wait(5)
    # this process's waiting thread took the flock once it was free, and let it go: a third process gets it
    third = subprocess.run(
        [sys.executable, "-c", HOLD, str(tmp_path / "db.sqlite3-writers")],
        input="\n",
        text=True,
        capture_output=True,
        timeout=10,
    )
    assert third.stdout == "held\n"
    assert line.enter(1)
    line.leave()


def test_it_gives_a_child_made_by_fork_a_line_of_its_own(tmp_path):
    database = str(tmp_path / "db.sqlite3")
    parents = line_of(database)
    assert parents.enter(1)
    child = os.fork()
    if child == 0:  # the child must wait for its parent, which holds the flock, not share it
        inherited_closed = not os.path.exists(f"/proc/self/fd/{parents.descriptor}") or (
            os.readlink(f"/proc/self/fd/{parents.descriptor}") != writers_file(database)
        )
        own = line_of(database)
        os._exit(0 if inherited_closed and own is not parents and not own.enter(0.1) else 1)
    _, status = os.waitpid(child, 0)
    parents.leave()
    assert os.waitstatus_to_exitcode(status) == 0


@on_sqlite
@pytest.mark.django_db(transaction=True)
def test_it_holds_a_second_write_transaction_until_the_first_commits():
    first_in = threading.Event()
    order: list[str] = []

    def first() -> None:
        with transaction.atomic():
            Group.objects.create(name="first")
            first_in.set()
            time.sleep(0.3)
            order.append("first commits")
        connection.close()

    def second() -> None:
        first_in.wait(5)
        with transaction.atomic():
            order.append("second begins")
            Group.objects.create(name="second")
        connection.close()

    threads = [threading.Thread(target=first), threading.Thread(target=second)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(10)
    assert order == ["first commits", "second begins"]
    assert sorted(Group.objects.values_list("name", flat=True)) == ["first", "second"]


@on_sqlite
@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("ending", ["rolled back", "closed"])
def test_it_gives_the_turn_back_however_the_transaction_ends(ending):
    line = line_of(str(connection.settings_dict["NAME"]))
    with pytest.raises(RuntimeError), transaction.atomic():
        Group.objects.create(name="gone")
        assert line.turn.locked()
        if ending == "closed":
            connection.close()
        raise RuntimeError(ending)
    assert not line.turn.locked()
    assert not Group.objects.filter(name="gone").exists()


def test_it_names_the_writers_file_beside_the_database():
    assert writers_file("/var/db.sqlite3") == "/var/db.sqlite3-writers"
