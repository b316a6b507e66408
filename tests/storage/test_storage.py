"""The default FS: one confined area per user, submit-time checks and launch-time mounts."""

import os

import pytest

from jobs.protocol.spec import NormalizedSpec
from jobs.storage import areas as storage
from jobs.storage.errors import StorageError
from tests.factories import partial_spec

# Where the areas live is an admin's setting (a storage config that holds them), read from the database.
pytestmark = pytest.mark.django_db


@pytest.fixture
def fs_root(settings, tmp_path):
    settings.PAI_FS_ROOT = tmp_path / "fs"
    return (tmp_path / "fs").resolve()


@pytest.fixture
def area(fs_root):
    return storage.user_area("alice")


def v1_spec(**paths: str) -> NormalizedSpec:
    return partial_spec(extras={"v1": dict(paths)})


def test_it_gives_each_user_an_area_under_the_root(fs_root):
    assert storage.default_fs_uri("alice") == str(fs_root / "alice")
    assert (fs_root / "alice").is_dir()


def test_it_expands_the_default_fs_uri_variable(area):
    (area / "data").mkdir()
    assert storage.resolve("alice", "$PAI_DEFAULT_FS_URI/data").host == area / "data"
    assert storage.resolve("alice", "${PAI_DEFAULT_FS_URI}/data").visible == str(area / "data")


def test_it_reads_relative_paths_inside_the_area(area):
    assert storage.resolve("alice", "data/x").host == area / "data" / "x"


def test_it_accepts_an_absolute_path_inside_the_area(area):
    assert storage.resolve("alice", f"{area}/data").host == area / "data"


def test_it_refuses_dot_dot(area):
    with pytest.raises(StorageError, match=r"'\.\.'"):
        storage.resolve("alice", "$PAI_DEFAULT_FS_URI/../bob/data")


def test_it_refuses_absolute_host_paths(area):
    with pytest.raises(StorageError, match="outside your storage area"):
        storage.resolve("alice", "/etc")


def test_it_refuses_another_users_area(fs_root, area):
    storage.user_area("bob")
    with pytest.raises(StorageError, match="outside your storage area"):
        storage.resolve("alice", str(fs_root / "bob"))


def test_it_refuses_a_symlink_that_leads_out(area, tmp_path):
    (area / "escape").symlink_to(tmp_path)
    spec = v1_spec(dataDir="$PAI_DEFAULT_FS_URI/escape")
    [(field, message)] = storage.validate_job_paths("alice", spec)
    assert field == "dataDir" and "escape: is a symbolic link" in message.text


def test_it_says_no_hdfs_is_configured(area):
    with pytest.raises(StorageError, match="no HDFS configured"):
        storage.resolve("alice", "hdfs://namenode:9000/data", field="dataDir")


def test_it_refuses_other_variables(area):
    with pytest.raises(StorageError, match="only \\$PAI_DEFAULT_FS_URI"):
        storage.resolve("alice", "$HOME/data")


def test_it_validates_a_jobs_paths_with_field_names(area):
    errors = storage.validate_job_paths("alice", v1_spec(dataDir="$PAI_DEFAULT_FS_URI/missing", codeDir="/etc"))
    assert [field for field, _ in errors] == ["dataDir", "codeDir"]
    assert "no such directory" in errors[0][1].text


def test_it_accepts_existing_data_and_a_new_output_dir(area):
    (area / "data").mkdir()
    spec = v1_spec(dataDir="$PAI_DEFAULT_FS_URI/data", outputDir="$PAI_DEFAULT_FS_URI/Output/job")
    assert storage.validate_job_paths("alice", spec) == []


def test_it_refuses_a_code_dir_over_the_limit(area):
    (area / "code").mkdir()
    with open(area / "code" / "big.bin", "wb") as big:
        big.truncate(storage.CODE_DIR_MAX_BYTES)  # sparse: no real disk use
    errors = storage.validate_job_paths("alice", v1_spec(codeDir="$PAI_DEFAULT_FS_URI/code"))
    assert errors and "200 MB" in errors[0][1].text


def test_it_mounts_the_area_then_data_read_only_and_output_read_write(area, tmp_path):
    (area / "data").mkdir()
    spec = v1_spec(dataDir="$PAI_DEFAULT_FS_URI/data", outputDir="$PAI_DEFAULT_FS_URI/out/job")
    mounts = storage.launch_mounts("alice", spec, tmp_path / "code-copy", "/pai/work")
    assert [(m.container_path, m.read_only) for m in mounts] == [
        (str(area), False),
        (str(area / "data"), True),
        (str(area / "out" / "job"), False),
    ]
    assert (area / "out" / "job").is_dir()


def test_it_copies_code_and_mounts_the_copy_read_only_under_the_work_dir(area, tmp_path):
    (area / "code").mkdir()
    (area / "code" / "train.py").write_text("print('hi')\n")
    mounts = storage.launch_mounts("alice", v1_spec(codeDir="code"), tmp_path / "copy", "/pai/work")
    assert mounts[-1].container_path == "/pai/work/code"
    assert mounts[-1].read_only
    assert (tmp_path / "copy" / "train.py").read_text() == "print('hi')\n"


def test_it_reads_a_three_line_auth_file(area):
    (area / "auth").write_text("https://registry.local:5000/\nuser\nsecret\n")
    assert storage.read_auth_file("alice", "auth") == {
        "registry": "registry.local:5000",
        "username": "user",
        "password": "secret",
    }


def test_it_rejects_a_short_auth_file(area):
    (area / "auth").write_text("registry.local\n")
    with pytest.raises(StorageError, match="three lines"):
        storage.read_auth_file("alice", "auth")


def test_it_saves_uploads_in_the_area(area):
    storage.save_file("alice", "data/a.txt", [b"hello ", b"world"])
    assert (area / "data" / "a.txt").read_bytes() == b"hello world"


def test_it_keeps_nothing_of_an_upload_over_the_limit(area):
    with pytest.raises(StorageError, match="upload limit"):
        storage.save_file("alice", "big.bin", [b"x" * 10, b"x" * 10], max_bytes=15)
    assert os.listdir(area) == []


def test_it_never_writes_through_a_planted_symlink(area, tmp_path):
    (area / "link").symlink_to(tmp_path / "outside.txt")
    with pytest.raises(StorageError):
        storage.save_file("alice", "link", [b"x"])
    assert not (tmp_path / "outside.txt").exists()


def test_it_lists_directories_first(area):
    storage.save_file("alice", "b.txt", [b"12"])
    storage.save_file("alice", "sub/c.txt", [b"1"])
    assert storage.list_dir("alice") == [
        storage.Entry("sub", True, 0),
        storage.Entry("b.txt", False, 2),
    ]


def test_it_removes_files_and_trees_but_not_the_area(area):
    storage.save_file("alice", "sub/c.txt", [b"1"])
    storage.remove("alice", "sub")
    assert not (area / "sub").exists()
    with pytest.raises(StorageError, match="whole storage area"):
        storage.remove("alice", "")


def test_it_copies_a_local_tree_into_the_area(area, tmp_path):
    source = tmp_path / "src"
    (source / "pkg").mkdir(parents=True)
    (source / "pkg" / "m.py").write_text("x = 1\n")
    storage.copy_into("alice", source, "code")
    assert (area / "code" / "pkg" / "m.py").read_text() == "x = 1\n"
