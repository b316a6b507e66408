"""Issue 27: the portal, as root, never follows a link that alice's own running task swaps into her
area. Each test starts alice's real sandboxed task running swapper.py (a RENAME_EXCHANGE loop, or an
inotify-timed swap for the code copy) and has the portal work on the swapped names TRIES times:
no byte of the portal's secret key or of bob's area reaches alice, nothing is made or removed
outside her area, and every answer is a clean one (a 2xx/3xx/4xx page, or a StorageError that
names her path), never a 500.
"""

from __future__ import annotations

import json
import os
import shutil
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from django.conf import settings
from django.contrib.messages.storage.cookie import CookieStorage
from django.core.files.uploadedfile import SimpleUploadedFile
from django.http import HttpRequest
from django.urls import reverse

from jobs.storage import areas as storage
from jobs.storage.errors import StorageError
from tests.factories import partial_spec
from tests.security.conftest import TRIES, Outside, Swapper, dir_pair, file_pair

# (Races in the storage areas' files: the database holds nothing of them, and CI's PostgreSQL run
# leaves them out.)
pytestmark = [pytest.mark.slow, pytest.mark.db_agnostic]

CLEAN_STATUSES = {200, 302, 400, 403, 404}
CODE_FILES = {f"f{number}.py": f"print('alice {number}')\n" for number in range(8)}


class Unclean(Exception):
    """An answer the portal must never give: a 500, or a failure other than a StorageError naming the path."""


@dataclass
class Tally:
    what: str
    tries: int = 0
    leaked: int = 0
    disturbed: int = 0
    unclean: int = 0
    examples: list[str] = field(default_factory=list)

    def note(self, text: str) -> None:
        if len(self.examples) < 3:
            self.examples.append(text[:200])

    @property
    def clean(self) -> bool:
        return self.tries > 0 and not (self.leaked or self.disturbed or self.unclean)

    def __str__(self) -> str:
        return (
            f"{self.what}: {self.leaked} of {self.tries} leaked, {self.disturbed} changed outside the area, "
            f"{self.unclean} unclean {self.examples}"
        )


def attack(outside: Outside, what: str, one_try: Callable[[int], bytes | str], *, names: tuple[str, ...]) -> Tally:
    """Run one_try TRIES times; it returns what alice gets back. An exception's text is what she
    gets back too (a launch that fails shows it in the job), and a StorageError must name one of
    `names` (her path); any other exception is a 500 or a portal bug."""
    tally = Tally(what)
    for number in range(TRIES):
        tally.tries += 1
        try:
            answer: bytes | str = one_try(number)
        except StorageError as exc:
            answer = str(exc)
            if not any(name in answer for name in names):
                tally.unclean += 1
                tally.note(f"StorageError not naming {names}: {exc.message}")
        except Exception as exc:
            answer = str(exc)
            tally.unclean += 1
            tally.note(f"{type(exc).__name__}: {exc}")
        if outside.leaked_in(answer):
            tally.leaked += 1
            tally.note(f"leaked: {answer[:120]!r}")
        changes = outside.disturbed()
        if changes:
            tally.disturbed += 1
            tally.note(changes[0])
    return tally


def assert_held(swapper: Swapper, *tallies: Tally) -> None:
    deadline = time.monotonic() + 1  # (the swapper reports a few times a second)
    while not swapper.counts().get("swaps") and time.monotonic() < deadline:
        time.sleep(0.05)
    counts = swapper.counts()
    report = "\n".join(str(tally) for tally in tallies) + f"\nswapper: {counts}"
    assert counts.get("swaps", 0) > 0, f"the swapper never swapped: {swapper.log()}"
    assert all(tally.clean for tally in tallies), report


# -- what alice gets back from a page ------------------------------------------------------------


def page_answer(response: Any) -> bytes:
    """The body and the flash messages of an answer; Unclean when it is a server error."""
    body = b"".join(response.streaming_content) if response.streaming else response.content
    answer = body + "\n".join(flashed(response)).encode()
    if response.status_code not in CLEAN_STATUSES:
        raise Unclean(f"HTTP {response.status_code}")
    return answer


def flashed(response: Any) -> list[str]:
    """The messages the next page would show (the cookie the answer sets)."""
    cookie = response.cookies.get("messages")
    if cookie is None or not cookie.value:
        return []
    request = HttpRequest()
    request.COOKIES["messages"] = cookie.value
    return [str(message) for message in CookieStorage(request)]


def removed(relative: str) -> str:
    storage.remove("alice", relative)
    return ""


def post(client: Any, data: dict[str, Any]) -> bytes:
    client.cookies.pop("messages", None)  # one answer's messages at a time
    return page_answer(client.post(reverse("storage:browse"), data))


def listing(entries: list[storage.Entry]) -> str:
    return "\n".join(f"{entry.name} {entry.is_dir} {entry.size}" for entry in entries)


def copied(destination: Path) -> bytes:
    """Every name and every regular file's bytes in a code copy (links stay links: not read)."""
    found = b""
    for parent, dirs, files in os.walk(destination):
        for name in dirs + files:
            path = Path(parent) / name
            found += name.encode() + b"\n"
            if path.is_file() and not path.is_symlink():
                found += path.read_bytes()
    return found


# -- targets: the portal's secret key in var/, and bob's area -----------------------------------

TARGETS = ["var-secret-key", "bobs-area"]


def file_target(outside: Outside, target: str) -> Path:
    return outside.secret_key if target == "var-secret-key" else outside.bobs_notes


def folder_target(outside: Outside, target: str) -> Path:
    return settings.VAR_DIR if target == "var-secret-key" else outside.bobs_area


# -- storage page and the fs operations ----------------------------------------------------------


@pytest.mark.parametrize("target", TARGETS)
def test_it_lists_no_folder_outside_the_area(start_swapper, outside, alice_client, target):
    swapper = start_swapper([dir_pair("list", folder_target(outside, target))])
    direct = attack(outside, "list_dir", lambda _: listing(storage.list_dir("alice", "list")), names=("list",))
    page = attack(
        outside,
        "storage page GET",
        lambda _: page_answer(alice_client.get(reverse("storage:browse"), {"path": "list"})),
        names=("list",),
    )
    assert_held(swapper, direct, page)


@pytest.mark.parametrize("target", TARGETS)
def test_it_downloads_no_file_outside_the_area(start_swapper, outside, alice_client, target):
    swapper = start_swapper([file_pair("dl.txt", file_target(outside, target))])
    page = attack(
        outside,
        "/storage/download",
        lambda _: page_answer(alice_client.get(reverse("storage:download"), {"path": "dl.txt"})),
        names=("dl.txt",),
    )
    assert_held(swapper, page)


@pytest.mark.parametrize("target", TARGETS)
def test_it_uploads_nothing_outside_the_area(start_swapper, outside, alice_client, target):
    swapper = start_swapper([dir_pair("up", folder_target(outside, target))])
    name = f"pwn-{outside.run_token}.txt"
    page = attack(
        outside,
        "storage page upload",
        lambda _: post(alice_client, {"action": "upload", "path": "up", "files": [SimpleUploadedFile(name, b"x")]}),
        names=("up",),
    )
    direct = attack(
        outside, "save_file", lambda _: str(storage.save_file("alice", f"up/{name}", [b"x"])), names=("up",)
    )
    assert_held(swapper, page, direct)


@pytest.mark.parametrize("target", TARGETS)
def test_it_makes_no_folder_outside_the_area(start_swapper, outside, alice_client, target):
    """The page has no mkdir of its own: an upload into a new folder path makes the folders."""
    swapper = start_swapper([dir_pair("mk", folder_target(outside, target))])
    folder = f"new-{outside.run_token}"
    page = attack(
        outside,
        "storage page upload into a new folder",
        lambda n: post(
            alice_client,
            {"action": "upload", "path": f"mk/{folder}-{n}", "files": [SimpleUploadedFile("x.txt", b"x")]},
        ),
        names=("mk",),
    )
    direct = attack(
        outside,
        "save_file into a new folder",
        lambda n: str(storage.save_file("alice", f"mk/{folder}-d{n}/x.txt", [b"x"])),
        names=("mk",),
    )
    assert_held(swapper, page, direct)


@pytest.mark.parametrize("target", TARGETS)
def test_it_removes_nothing_outside_the_area(start_swapper, outside, alice_client, target):
    victim = f"victim-{outside.run_token}.txt"
    decoy = folder_target(outside, target) / victim  # what a followed link would remove
    decoy.write_text("not alice's\n")
    outside.watch()
    swapper = start_swapper([dir_pair("del", folder_target(outside, target), {victim: "alice's own\n"})])
    page = attack(
        outside,
        "storage page delete",
        lambda _: post(alice_client, {"action": "delete", "path": "del", "name": victim, "confirm": "yes"}),
        names=("del",),
    )
    direct = attack(outside, "remove", lambda _: removed(f"del/{victim}"), names=("del",))
    assert_held(swapper, page, direct)


def test_it_removes_a_flipping_folder_cleanly(start_swapper, outside, alice_client):
    swapper = start_swapper([dir_pair("gone", outside.bobs_area)])
    page = attack(
        outside,
        "storage page delete of the folder itself",
        lambda _: post(alice_client, {"action": "delete", "path": "", "name": "gone", "confirm": "yes"}),
        names=("gone",),
    )
    direct = attack(outside, "remove of the folder itself", lambda _: removed("gone"), names=("gone",))
    assert_held(swapper, page, direct)


# -- launch: codeDir copy, outputDir creation, authFile ------------------------------------------


def launch(tmp_path: Path, v1: dict[str, str], number: int) -> bytes:
    """launch_mounts for a job with these v1 paths; what reaches the task: the mounts and the code copy."""
    destination = tmp_path / "copies" / str(number) / "code"
    try:
        mounts = storage.launch_mounts("alice", partial_spec(extras={"v1": v1}), destination, "/work")
        return json.dumps([mount.host_path for mount in mounts]).encode() + (
            copied(destination) if destination.exists() else b""
        )
    finally:
        shutil.rmtree(destination.parent, ignore_errors=True)


@pytest.mark.parametrize("target", TARGETS)
def test_it_copies_no_code_from_outside_the_area(start_swapper, outside, tmp_path, target):
    pairs = [file_pair(f"code/{name}", file_target(outside, target), text) for name, text in CODE_FILES.items()]
    swapper = start_swapper(pairs)
    copies = attack(
        outside,
        "codeDir copy (files swapped in a loop)",
        lambda n: launch(tmp_path, {"codeDir": "$PAI_DEFAULT_FS_URI/code"}, n),
        names=("code",),
    )
    assert_held(swapper, copies)


def test_it_copies_no_folder_from_outside_the_area_as_code(start_swapper, outside, tmp_path):
    swapper = start_swapper([dir_pair("code", outside.bobs_area, CODE_FILES)])
    copies = attack(
        outside,
        "codeDir copy (the folder swapped in a loop)",
        lambda n: launch(tmp_path, {"codeDir": "$PAI_DEFAULT_FS_URI/code"}, n),
        names=("code",),
    )
    assert_held(swapper, copies)


@pytest.mark.parametrize("target", TARGETS)
def test_it_copies_no_code_swapped_the_moment_the_portal_lists_it(start_swapper, outside, tmp_path, target):
    swapper = start_swapper(
        inotify=[{"dir": "code", "files": CODE_FILES, "targets": [str(file_target(outside, target))]}]
    )
    copies = attack(
        outside,
        "codeDir copy (files swapped by inotify)",
        lambda n: launch(tmp_path, {"codeDir": "$PAI_DEFAULT_FS_URI/code"}, n),
        names=("code",),
    )
    counts = swapper.counts()
    assert counts.get("listings", 0) > 0, f"the swapper never saw the portal list the code: {swapper.log()}"
    assert_held(swapper, copies)


@pytest.mark.parametrize("target", TARGETS)
def test_it_makes_no_output_folder_outside_the_area(start_swapper, outside, tmp_path, target):
    swapper = start_swapper([dir_pair("out", folder_target(outside, target))])
    folder = f"new-{outside.run_token}"
    made = attack(
        outside,
        "outputDir creation",
        lambda n: launch(tmp_path, {"outputDir": f"$PAI_DEFAULT_FS_URI/out/{folder}-{n}"}, n),
        names=("out",),
    )
    assert_held(swapper, made)


@pytest.mark.parametrize("target", TARGETS)
def test_it_reads_no_auth_file_from_outside_the_area(start_swapper, outside, target):
    swapper = start_swapper([file_pair("auth.txt", file_target(outside, target), "registry.example\nalice\npw\n")])
    reads = attack(
        outside,
        "authFile read",
        lambda _: json.dumps(storage.read_auth_file("alice", "$PAI_DEFAULT_FS_URI/auth.txt")),
        names=("auth.txt",),
    )
    assert_held(swapper, reads)
