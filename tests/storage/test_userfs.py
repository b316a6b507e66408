"""The one rule for files below a user-writable directory (clusters.userfs): a link met anywhere in
a name is refused, naming the path, whatever the operation; only regular files are read; writes land
in the folder that was checked."""

from __future__ import annotations

import os
import signal
import stat
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from django.urls import reverse

from clusters import userfs
from clusters.executors.sandbox import outermost
from jobs.protocol.spec import NormalizedSpec
from jobs.storage import areas as storage
from jobs.storage.errors import StorageError
from tests.factories import partial_spec

pytestmark = pytest.mark.django_db

LINK_REFUSED = "is a symbolic link; links are not followed"


@pytest.fixture
def area(settings, tmp_path) -> Path:
    settings.PAI_FS_ROOT = tmp_path / "fs"
    settings.PAI_WORK_ROOT = tmp_path / "work"
    return storage.user_area("alice")


@pytest.fixture
def outside(tmp_path) -> Path:
    """What a task would point its links at: the portal's secrets."""
    secrets = tmp_path / "var"
    (secrets / "sub").mkdir(parents=True)
    (secrets / "secret_key").write_text("the portal's key")
    (secrets / "sub" / "secret_key").write_text("the portal's key")
    return secrets


def snapshot(directory: Path) -> dict[str, str]:
    return {
        str(path.relative_to(directory)): path.read_text() if path.is_file() else "/"
        for path in sorted(directory.rglob("*"))
    }


def v1(**paths: str) -> NormalizedSpec:
    return partial_spec(extras={"v1": dict(paths)})


def count_then_remove(name: str) -> None:
    """The storage page's delete: how many files first (for the confirmation), then the delete."""
    assert storage.files_under("alice", name) == 0
    storage.remove("alice", name)


# Each operation on a name: (operation, the name when a folder of it is a link, the name when it is one).
OPERATIONS: dict[str, tuple[Callable[[Path, str], object], str, str]] = {
    "list": (lambda tmp, name: storage.list_dir("alice", name), "folder/sub", "folder"),
    "read": (lambda tmp, name: storage.file_to_read("alice", name), "folder/secret_key", "file"),
    "write": (lambda tmp, name: storage.save_file("alice", name, [b"alice's"]), "folder/secret_key", "file"),
    "remove": (lambda tmp, name: storage.remove("alice", name), "folder/secret_key", "file"),
    "count-then-remove": (lambda tmp, name: count_then_remove(name), "folder/sub", "folder"),
    "mkdir": (
        lambda tmp, name: storage.launch_mounts("alice", v1(outputDir=name), tmp / "c", "/w"),
        "folder/new",
        "folder",
    ),
    "copy": (
        lambda tmp, name: storage.launch_mounts("alice", v1(codeDir=name), tmp / "c", "/w"),
        "folder/sub",
        "folder",
    ),
    "authFile": (lambda tmp, name: storage.read_auth_file("alice", name), "folder/secret_key", "file"),
}


@pytest.fixture(params=["outside", "inside"])
def planted(request, area, outside) -> Path:
    """`folder` and `file` in the area are links: to the portal's secrets, or (passing any check
    by path) to a copy of them inside the area."""
    target = outside if request.param == "outside" else area / "copy"
    if request.param == "inside":
        (target / "sub").mkdir(parents=True)
        (target / "secret_key").write_text("the portal's key")
    (area / "folder").symlink_to(target)
    (area / "file").symlink_to(target / "secret_key")
    return target


# A remove of the link itself is no refusal: test_it_removes_a_link_not_what_it_points_at.
REFUSALS = [
    (operation, position)
    for operation in sorted(OPERATIONS)
    for position in ("folder", "leaf")
    if not (position == "leaf" and "remove" in operation)
]


@pytest.mark.parametrize(("operation", "position"), REFUSALS)
def test_it_refuses_a_link_anywhere_in_the_name(operation, position, planted, outside, tmp_path):
    run, in_folder, leaf = OPERATIONS[operation]
    name = in_folder if position == "folder" else leaf
    before = snapshot(outside)
    with pytest.raises(StorageError, match="symbolic link") as refused:
        run(tmp_path, name)
    assert name.split("/")[0] in str(refused.value)
    assert snapshot(outside) == before
    assert not (tmp_path / "c").exists()


@pytest.mark.parametrize("operation", ["remove", "count-then-remove"])
def test_it_removes_a_link_not_what_it_points_at(operation, planted, outside, area, tmp_path):
    run, _in_folder, leaf = OPERATIONS[operation]
    before = snapshot(outside)
    run(tmp_path, leaf)
    assert not (area / leaf).is_symlink()
    assert snapshot(outside) == before


def test_it_names_the_link_it_met(area, outside):
    (area / "data").mkdir()
    (area / "data" / "x").symlink_to(outside)
    with pytest.raises(StorageError, match=f"^data/x: {LINK_REFUSED}$"):
        storage.list_dir("alice", "data/x/sub")


@pytest.fixture
def alarm() -> Iterator[None]:
    """A hang fails the test instead of blocking the run."""

    def hung(*_args: object) -> None:
        raise TimeoutError("the portal would hang here")

    previous = signal.signal(signal.SIGALRM, hung)
    signal.alarm(5)
    yield
    signal.alarm(0)
    signal.signal(signal.SIGALRM, previous)


def test_it_refuses_a_fifo_without_hanging(area, alarm):
    os.mkfifo(area / "pipe")
    with pytest.raises(StorageError, match=r"^pipe: is not a regular file$"):
        storage.file_to_read("alice", "pipe")
    with pytest.raises(StorageError, match="not a regular file"):
        storage.read_auth_file("alice", "pipe")


def test_it_refuses_a_device_node(area):
    os.mknod(area / "disk", stat.S_IFCHR | 0o600, os.makedev(1, 3))
    with pytest.raises(StorageError, match="not a regular file"):
        storage.file_to_read("alice", "disk")


def test_it_leaves_fifos_out_of_a_code_copy(area, tmp_path, alarm):
    (area / "code").mkdir()
    os.mkfifo(area / "code" / "pipe")
    (area / "code" / "train.py").write_text("print(1)\n")
    storage.launch_mounts("alice", v1(codeDir="code"), tmp_path / "work" / "copy", "/w")
    assert sorted(os.listdir(tmp_path / "work" / "copy")) == ["train.py"]


def test_it_copies_links_inside_the_code_as_links(area, tmp_path, outside):
    code = area / "code"
    (code / "pkg").mkdir(parents=True)
    (code / "pkg" / "model.py").write_text("x = 1\n")
    (code / "model.py").symlink_to("pkg/model.py")
    (code / "key").symlink_to(outside / "secret_key")
    copy = tmp_path / "work" / "tasks" / "job-1" / "worker-0" / "code"
    storage.launch_mounts("alice", v1(codeDir="code"), copy, "/w")
    assert os.readlink(copy / "model.py") == "pkg/model.py"
    assert (copy / "model.py").read_text() == "x = 1\n"
    assert os.readlink(copy / "key") == str(outside / "secret_key")  # a link, its target never read


def test_it_keeps_the_code_size_limit_on_what_it_reads(area, tmp_path):
    (area / "code").mkdir()
    (area / "code" / "big.bin").write_bytes(b"x" * 2048)
    with pytest.raises(StorageError, match="over the 0 MB limit"):
        storage.copy_code(area / "code", tmp_path / "work" / "copy", limit=1024)


def test_it_replaces_a_link_planted_where_the_code_copy_goes(area, tmp_path, outside):
    (area / "code").mkdir()
    (area / "code" / "train.py").write_text("print(1)\n")
    work_dir = tmp_path / "work" / "tasks" / "job-1" / "worker-0"
    work_dir.mkdir(parents=True)
    (work_dir / "code").symlink_to(outside)  # left by the task's earlier attempt
    storage.launch_mounts("alice", v1(codeDir="code"), work_dir / "code", "/w")
    assert not (work_dir / "code").is_symlink()
    assert sorted(os.listdir(outside)) == ["secret_key", "sub"]


def test_it_streams_the_file_it_checked(area, outside):
    (area / "notes.txt").write_text("alice's notes")
    opened = storage.file_to_read("alice", "notes.txt")
    (area / "notes.txt").rename(area / "old.txt")
    (area / "notes.txt").symlink_to(outside / "secret_key")  # swapped after the check
    with opened:
        assert opened.read() == b"alice's notes"
    assert opened.name == "notes.txt"


def test_it_renames_an_upload_into_the_folder_it_checked(area, outside):
    (area / "data").mkdir()

    def chunks() -> Iterator[bytes]:
        yield b"alice's "
        (area / "data").rename(area / "moved")  # mid-upload, the folder's name now leads out
        (area / "data").symlink_to(outside)
        yield b"upload"

    storage.save_file("alice", "data/secret_key", chunks())
    assert (area / "moved" / "secret_key").read_text() == "alice's upload"
    assert (outside / "secret_key").read_text() == "the portal's key"


def test_it_replaces_a_link_swapped_in_at_the_name_mid_upload(area, outside):
    def chunks() -> Iterator[bytes]:
        yield b"alice's"
        (area / "notes.txt").symlink_to(outside / "secret_key")

    storage.save_file("alice", "notes.txt", chunks())
    assert not (area / "notes.txt").is_symlink()
    assert (outside / "secret_key").read_text() == "the portal's key"


def test_it_hides_and_removes_half_written_uploads(area):
    with pytest.raises(StorageError, match="upload limit"):
        storage.save_file("alice", "big.bin", [b"x" * 10, b"x" * 10], max_bytes=15)
    assert os.listdir(area) == []


def test_it_removes_a_tree_without_following_its_links(area, outside):
    (area / "data" / "deep").mkdir(parents=True)
    (area / "data" / "deep" / "key").symlink_to(outside / "secret_key")
    (area / "data" / "var").symlink_to(outside)
    storage.remove("alice", "data")
    assert not (area / "data").exists()
    assert snapshot(outside) == {"secret_key": "the portal's key", "sub": "/", "sub/secret_key": "the portal's key"}


def test_it_lists_a_link_as_the_link_itself(area, outside):
    (area / "var").symlink_to(outside)
    assert storage.list_dir("alice") == [storage.Entry("var", False, len(str(outside)))]


def test_it_hands_over_a_tree_without_touching_what_links_point_at(area, outside):
    (area / "out").mkdir()
    (area / "out" / "var").symlink_to(outside)
    with userfs.opened_below_parent(area) as directory:
        assert directory is not None
        userfs.chown_tree(directory, 54321, 54321)
    assert (area / "out").stat().st_uid == 54321
    assert (area / "out" / "var").lstat().st_uid == 54321
    assert {path.stat().st_uid for path in [outside, *outside.rglob("*")]} == {os.getuid()}


def test_it_hands_over_only_the_outermost_of_nested_paths():
    assert outermost(["/fs/alice/out/job", "/fs/alice", "/work/job-1/w-0", "/work/job-1/w-0-etc", "/fs/alice2"]) == [
        "/fs/alice",
        "/fs/alice2",
        "/work/job-1/w-0",
        "/work/job-1/w-0-etc",
    ]


@pytest.mark.parametrize("name", ["../bob", "a/../../b", "/etc/passwd", "a\0b"])
def test_it_refuses_names_that_leave_the_walk(area, name):
    with userfs.opened_root(area) as root, pytest.raises(userfs.UserFsError):
        userfs.open_dir(root, name)


def test_it_answers_the_storage_page_with_4xx_naming_the_link(client, user, area, outside):
    client.force_login(user)
    (area / "folder").symlink_to(outside)
    (area / "file").symlink_to(outside / "secret_key")
    download = client.get(reverse("storage:download"), {"path": "file"})
    listing = client.get(reverse("storage:browse"), {"path": "folder"})
    assert (download.status_code, listing.status_code) == (404, 400)
    assert f"folder: {LINK_REFUSED}" in listing.content.decode()
    assert b"portal's key" not in download.content + listing.content
