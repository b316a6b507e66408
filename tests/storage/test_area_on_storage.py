"""The users' areas on an admin's storage: $PAI_DEFAULT_FS_URI and dataDir / outputDir resolve
there, and each node mounts the user's own folder of it (not the portal's local directory)."""

from __future__ import annotations

import pytest

from clusters.executors.base import NfsVolume
from jobs.storage import areas as storage
from tests.factories import partial_spec

pytestmark = pytest.mark.django_db


@pytest.fixture
def homes(make_storage, tmp_path):
    return make_storage("homes", mount_path="/mnt/homes", holds_user_areas=True, portal_path=str(tmp_path / "homes"))


def test_it_points_pai_default_fs_uri_at_the_users_folder_on_the_storage(homes, user):
    assert storage.default_fs_uri("alice") == "/mnt/homes/alice"


def test_it_keeps_the_users_files_on_the_portals_view_of_the_storage(homes, user, tmp_path):
    storage.save_file("alice", "data/a.txt", [b"a"])
    assert (tmp_path / "homes" / "alice" / "data" / "a.txt").read_bytes() == b"a"


def test_it_resolves_a_config_path_to_the_storage_and_to_where_tasks_see_it(homes, user, tmp_path):
    path = storage.resolve("alice", "$PAI_DEFAULT_FS_URI/data")
    assert (path.host, path.visible) == ((tmp_path / "homes" / "alice" / "data").resolve(), "/mnt/homes/alice/data")


def test_it_refuses_an_absolute_path_outside_the_users_folder(homes, user):
    with pytest.raises(storage.StorageError, match="outside your storage area"):
        storage.resolve("alice", "/mnt/homes/bob/data", field="dataDir")


def test_it_mounts_the_area_and_data_dir_from_the_nfs_export_on_the_node(homes, user, tmp_path):
    storage.save_file("alice", "data/a.txt", [b"a"])
    spec = partial_spec(extras={"v1": {"dataDir": "$PAI_DEFAULT_FS_URI/data", "outputDir": "$PAI_DEFAULT_FS_URI/out"}})
    mounts = storage.launch_mounts("alice", spec, tmp_path / "code", "/pai/work")
    assert [(m.container_path, m.nfs, m.read_only) for m in mounts] == [
        ("/mnt/homes/alice", NfsVolume("10.0.0.5", "/export/homes/alice"), False),
        ("/mnt/homes/alice/data", NfsVolume("10.0.0.5", "/export/homes/alice/data"), True),
        ("/mnt/homes/alice/out", NfsVolume("10.0.0.5", "/export/homes/alice/out"), False),
    ]
