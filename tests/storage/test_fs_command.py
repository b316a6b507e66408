"""`manage.py fs upload|ls|rm --user NAME`."""

import io

import pytest
from django.core.management import CommandError, call_command

from jobs.storage import areas as storage

pytestmark = pytest.mark.django_db


@pytest.fixture
def area(settings, tmp_path, user):
    settings.PAI_FS_ROOT = tmp_path / "fs"
    return storage.user_area(user.username)


def fs(*args: str) -> str:
    out = io.StringIO()
    call_command("fs", *args, stdout=out)
    return out.getvalue()


def test_it_uploads_a_directory_into_the_users_area(area, tmp_path):
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "train.py").write_text("print(1)\n")
    out = fs("upload", "--user", "alice", str(tmp_path / "src"), "code")
    assert (area / "code" / "train.py").read_text() == "print(1)\n"
    assert "$PAI_DEFAULT_FS_URI/code/train.py" in out


def test_it_uploads_a_file_under_its_own_name(area, tmp_path):
    (tmp_path / "auth.txt").write_text("registry\nuser\npassword\n")
    fs("upload", "--user", "alice", str(tmp_path / "auth.txt"), "secrets/")
    assert (area / "secrets" / "auth.txt").exists()


def test_it_lists_a_directory(area):
    storage.save_file("alice", "data/x.bin", [b"12345"])
    out = fs("ls", "--user", "alice")
    assert "data/" in out
    assert "5  x.bin" in fs("ls", "--user", "alice", "data")


def test_it_removes_a_path(area):
    storage.save_file("alice", "data/x.bin", [b"1"])
    fs("rm", "--user", "alice", "data")
    assert not (area / "data").exists()


def test_it_refuses_paths_outside_the_area(area):
    with pytest.raises(CommandError, match=r"'\.\.'"):
        fs("rm", "--user", "alice", "../bob")


def test_it_refuses_an_unknown_user(area):
    with pytest.raises(CommandError, match="no such user"):
        fs("ls", "--user", "nobody")
