"""Symlink-swap attacks with a real sandboxed task: alice's own task swaps names of her area for links
to what lies outside it (the portal's secret key in var/, bob's area) while the portal, as root,
works on those names for her. Needs root (the task runs as the sandbox uid, the portal as root:
the attack is about root following alice's links) and a working bubblewrap sandbox."""

from __future__ import annotations

import contextlib
import functools
import json
import logging
import os
import secrets
import shutil
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from django.conf import settings

from catalogue import Message
from clusters.executors.sandbox import Sandbox
from jobs.actions import stop_job
from jobs.models import Job, JobState
from jobs.storage import areas as storage
from tests.conftest import require
from tests.scheduler.conftest import make_launch, process_node, role, run_until, scheduler, submit, v2_job  # noqa: F401

SWAPPER = Path(__file__).with_name("swapper.py")
TRIES = 200  # per operation and target
SWAPPER_SECONDS = 120  # a backstop: the test stops the task long before
SWAP_WORKERS = 2  # processes looping on the same pairs (one may be preempted: the other swaps on)
SWINGING_SWAPS = 5000  # (a fraction of a second of swapping)


@functools.cache
def sandbox_problem() -> str | Message | None:
    if os.geteuid() != 0:
        return (
            "not running as root: the attack is root following a user's links; only root runs tasks as the sandbox uid"
        )
    return Sandbox().probe()


@pytest.fixture(autouse=True)
def root_and_sandbox():
    problem = sandbox_problem()
    require(not problem, f"root and a bubblewrap sandbox that runs tasks as the sandbox uid ({problem})")


@pytest.fixture
def tmp_path() -> Iterator[Path]:
    """The portal's folders (work, logs, users' areas) for one test, outside /tmp/pytest-of-<user>:
    every pytest session that starts on this machine takes o+x off that folder again, and the
    sandbox uid must pass through the folders above a task's mounts."""
    path = Path(tempfile.mkdtemp(prefix="pai-attack-"))
    yield path
    shutil.rmtree(path, ignore_errors=True)


# -- what lies outside alice's area ------------------------------------------------------------


class Watched:
    """Entries of a directory (those whose name passes `picked`), as they were: what changed since,
    and putting it back, so that each try starts from the same place."""

    def __init__(self, directory: Path, picked: Callable[[str], bool] = lambda name: True):
        self.directory = directory
        self.picked = picked
        self.before = self._now()

    def _now(self) -> dict[str, bytes | None]:
        entries: dict[str, bytes | None] = {}
        for name in os.listdir(self.directory):
            if self.picked(name):
                path = self.directory / name
                entries[name] = None if path.is_dir() or path.is_symlink() else path.read_bytes()
        return entries

    def changes(self) -> list[str]:
        now = self._now()
        made = [f"made {self.directory / name}" for name in now.keys() - self.before.keys()]
        gone = [f"removed {self.directory / name}" for name in self.before.keys() - now.keys()]
        altered = [
            f"changed {self.directory / name}"
            for name in now.keys() & self.before.keys()
            if now[name] != self.before[name]
        ]
        return made + gone + altered

    def restore(self) -> None:
        now = self._now()
        for name in now.keys() - self.before.keys():
            _remove(self.directory / name)
        for name, content in self.before.items():
            if content is not None and now.get(name) != content:
                (self.directory / name).write_bytes(content)

    def clear(self) -> None:
        """Remove every picked entry (the test's own decoys included)."""
        for name in os.listdir(self.directory):
            if self.picked(name):
                _remove(self.directory / name)


def _remove(path: Path) -> None:
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path)
    else:
        path.unlink(missing_ok=True)


@dataclass
class Outside:
    """The portal's secret key (in var/) and bob's area: no byte of either may reach alice, nothing
    may be made, changed or removed there on her behalf."""

    secret_key: Path
    bobs_area: Path
    bobs_notes: Path
    run_token: str  # in the names this test makes (uploads, decoys): var/ is watched for them
    bob_token: str  # in bob's file names and contents: never in what alice gets back
    pieces: list[bytes] = field(default_factory=list)
    watched: list[Watched] = field(default_factory=list)

    def leaked_in(self, data: bytes | str) -> bool:
        raw = data.encode(errors="replace") if isinstance(data, str) else data
        return any(piece in raw for piece in self.pieces)

    def watch(self) -> None:
        """Take the snapshots the tries are compared with (after the test's own set-up)."""
        self.watched = [Watched(self.bobs_area), Watched(settings.VAR_DIR, lambda name: self.run_token in name)]

    def disturbed(self) -> list[str]:
        """What changed outside the area since watch(); put back at once (a leak counts once)."""
        changes = [change for watched in self.watched for change in watched.changes()]
        if changes:
            for watched in self.watched:
                watched.restore()
        return changes


def _pieces(secret: bytes, *markers: bytes) -> list[bytes]:
    """Any 16 bytes of the secret in a row, or a marker, is a leak."""
    secret = secret.strip()
    return [secret[start : start + 16] for start in range(0, max(len(secret) - 15, 1), 8)] + list(markers)


@pytest.fixture
def outside(process_node, other_user) -> Iterator[Outside]:  # noqa: F811
    run_token = f"attack{secrets.token_hex(6)}"
    bob_token = f"bobsecret{secrets.token_hex(8)}"
    secret_key = settings.VAR_DIR / "secret_key"
    made_secret = not secret_key.is_file()  # SECRET_KEY from the environment: a stand-in file in var/
    if made_secret:
        secret_key = settings.VAR_DIR / f"secret_key-{run_token}"
        secret_key.write_text(f"portal-secret-{secrets.token_urlsafe(48)}\n")
        secret_key.chmod(0o600)
    bobs_area = storage.user_area(other_user.username)
    bobs_notes = bobs_area / f"notes-{bob_token}.txt"
    # Three lines: it would pass as an authFile, so a swapped read returns it rather than an error.
    bobs_notes.write_text(f"registry-{bob_token}.example\nuser-{bob_token}\npassword-{bob_token}\n")
    found = Outside(
        secret_key=secret_key,
        bobs_area=bobs_area,
        bobs_notes=bobs_notes,
        run_token=run_token,
        bob_token=bob_token,
        pieces=_pieces(secret_key.read_bytes(), b"secret_key", bob_token.encode()),
    )
    found.watch()
    yield found
    Watched(settings.VAR_DIR, lambda name: run_token in name).clear()


# -- alice's attacking task --------------------------------------------------------------------


@dataclass
class Swapper:
    job: Job
    count_files: list[Path]

    def counts(self) -> dict[str, int]:
        total: dict[str, int] = {}
        for path in self.count_files:
            with contextlib.suppress(OSError, ValueError):
                for key, value in json.loads(path.read_text()).items():
                    total[key] = total.get(key, 0) + value
        return total

    def swinging(self, *, looping: bool) -> bool:
        """Every swap loop has reported, and the RENAME_EXCHANGE one is well under way."""
        return all(path.exists() for path in self.count_files) and (
            not looping or self.counts().get("swaps", 0) >= SWINGING_SWAPS
        )

    def log(self) -> str:
        task = self.job.tasks.get()
        with contextlib.suppress(OSError, TypeError):
            return Path(task.log_path).read_text()
        return ""


def file_pair(name: str, target: Path, content: str = "alice's own file\n") -> dict[str, Any]:
    return {"name": name, "kind": "file", "content": content, "target": str(target)}


def dir_pair(name: str, target: Path, files: dict[str, str] | None = None) -> dict[str, Any]:
    return {
        "name": name,
        "kind": "dir",
        "files": files or {"readme.txt": "alice's own folder\n"},
        "target": str(target),
    }


@pytest.fixture
def start_swapper(user, submit, run_until) -> Iterator[Callable[..., Swapper]]:  # noqa: F811
    """Start alice's task running tests/security/swapper.py on a plan; stopped after the test."""
    started: list[Job] = []

    def start(pairs: Sequence[dict[str, Any]] = (), inotify: Sequence[dict[str, Any]] = ()) -> Swapper:
        area = storage.user_area(user.username)
        attack = area / ".attack"
        attack.mkdir(exist_ok=True)
        shutil.copy(SWAPPER, attack / "swapper.py")
        plan = {
            "seconds": SWAPPER_SECONDS,
            "count_file": ".attack/count",
            "workers": SWAP_WORKERS,
            "pairs": list(pairs),
            "inotify": list(inotify),
        }
        (attack / "plan.json").write_text(json.dumps(plan))
        command = "/usr/bin/python3 $PAI_DEFAULT_FS_URI/.attack/swapper.py $PAI_DEFAULT_FS_URI/.attack/plan.json"
        job = submit(v2_job("swapper", role("attacker", command)))
        started.append(job)
        run_until(job, JobState.RUNNING)
        workers = [attack / f"count-worker-{number}" for number in range(1, SWAP_WORKERS)]
        count_files = ([attack / "count", *workers] if pairs else []) + [
            attack / f"count-inotify-{number}" for number in range(len(inotify))
        ]
        swapper = Swapper(job, count_files)
        deadline = time.monotonic() + 20
        while not swapper.swinging(looping=bool(pairs)):
            job.refresh_from_db()
            alive = job.state == JobState.RUNNING and not swapper.log().strip()  # it prints only when done
            assert alive and time.monotonic() < deadline, f"the swapper did not start ({job.state}): {swapper.log()}"
            time.sleep(0.05)
        return swapper

    yield start
    for job in started:
        job.refresh_from_db()
        if job.state == JobState.RUNNING:
            stop_job(job, by=user)
            run_until(job, JobState.STOPPED, JobState.FAILED, JobState.SUCCEEDED)


@pytest.fixture
def area(user, process_node) -> Path:  # noqa: F811
    return storage.user_area(user.username)


@pytest.fixture
def alice_client(user, area) -> Iterator[Any]:
    """A signed-in browser of alice's that gets the portal's 500 pages instead of exceptions (the
    tests count them; their tracebacks, one per 500, would bury the counts)."""
    from django.test import Client

    client = Client(raise_request_exception=False)
    client.force_login(user)
    request_log = logging.getLogger("django.request")
    request_log.disabled = True
    yield client
    request_log.disabled = False
