"""Admin-declared storages: who may use them, the teamwise_storage plugin checked at submit (the
field named), and the mounts a task gets on any node."""

from __future__ import annotations

import pytest
from django.core.exceptions import ValidationError

from clusters.executors.base import Mount, NfsVolume
from clusters.models import StorageConfig, VirtualCluster
from jobs.actions import submit_job
from jobs.protocol import JobConfigError
from jobs.storage.configs import task_mounts
from tests.factories import v2_yaml

pytestmark = pytest.mark.django_db

PLUGIN = "extras.com.microsoft.pai.runtimeplugin[0].parameters.storageConfigNames"


def teamwise(*names: str) -> str:
    listed = "".join(f"\n          - {name}" for name in names) or " []"
    return f"""extras:
  com.microsoft.pai.runtimeplugin:
    - plugin: teamwise_storage
      parameters:
        storageConfigNames:{listed}
"""


def submit_errors(user, text: str) -> dict[str, str]:
    with pytest.raises(JobConfigError) as error:
        submit_job(user, text)
    return dict(error.value.english)


@pytest.mark.parametrize(
    ("fields", "field"),
    [
        ({"kind": "samba"}, "kind"),
        ({"server": ""}, "server"),
        ({"server": "10.0.0.5,vers=3"}, "server"),
        ({"path": "export/relative"}, "path"),
        ({"mount_path": "/mnt/../etc"}, "mount_path"),
        ({"mount_options": "nfsvers=4.1,addr=1.2.3.4"}, "mount_options"),
        ({"holds_user_areas": True}, "portal_path"),
    ],
)
def test_it_refuses_a_storage_config_it_cannot_mount_naming_the_field(fields, field):
    config = StorageConfig(**{"name": "bad", "kind": "nfs", "server": "10.0.0.5", "path": "/export/bad", **fields})
    with pytest.raises(ValidationError) as error:
        config.full_clean()
    assert field in error.value.message_dict


def test_it_opens_a_storage_that_names_nobody_to_everyone(make_storage, user):
    assert make_storage().is_open_to(user)


def test_it_opens_a_restricted_storage_only_to_its_users_and_admins(make_storage, user, other_user, admin_user):
    config = make_storage()
    config.allowed_users.add(other_user)
    assert not config.is_open_to(user)
    assert config.is_open_to(other_user) and config.is_open_to(admin_user)


def test_it_opens_a_storage_to_the_users_of_its_virtual_clusters(make_storage, user, other_user):
    vc = VirtualCluster.objects.create(name="team-vc")
    vc.allowed_users.add(user)
    config = make_storage()
    config.virtual_clusters.add(vc)
    assert config.is_open_to(user) and not config.is_open_to(other_user)


def test_it_refuses_at_submit_a_storage_that_does_not_exist_naming_the_field(make_storage, user, default_vc):
    make_storage("team")
    errors = submit_errors(user, v2_yaml("named", extra=teamwise("team", "nosuch")))
    assert errors == {f"{PLUGIN}[1]": "storage 'nosuch' does not exist (yours: team)"}


def test_it_refuses_at_submit_a_storage_the_user_may_not_use(make_storage, user, other_user, default_vc):
    make_storage("private").allowed_users.add(other_user)
    errors = submit_errors(user, v2_yaml("forbidden", extra=teamwise("private")))
    assert errors == {f"{PLUGIN}[0]": "you may not use storage 'private'"}


def test_it_refuses_two_storages_at_one_mount_point(make_storage, user, default_vc):
    make_storage("a", mount_path="/mnt/data")
    make_storage("b", mount_path="/mnt/data")
    errors = submit_errors(user, v2_yaml("clash", extra=teamwise("a", "b")))
    assert errors == {f"{PLUGIN}[1]": "mounts at /mnt/data, as storage 'a' does"}


def test_it_mounts_a_named_nfs_storage_at_its_mount_point_through_the_node(make_storage, user, default_vc):
    make_storage("team", mount_options="nfsvers=4.1", read_only=True)
    job = submit_job(user, v2_yaml("mounted", extra=teamwise("team")))
    assert task_mounts(user, job.spec) == [
        Mount(
            host_path="",
            container_path="/mnt/team",
            read_only=True,
            nfs=NfsVolume(server="10.0.0.5", export="/export/team", options="nfsvers=4.1"),
            storage="team",
            shared=True,
        )
    ]


def test_it_mounts_only_the_users_own_folder_of_a_per_user_storage(make_storage, user, default_vc):
    make_storage("homes", kind="hostPath", server="", path="/data/homes", per_user=True)
    job = submit_job(user, v2_yaml("own", extra=teamwise("homes")))
    assert task_mounts(user, job.spec) == [
        Mount("/data/homes/alice", "/mnt/homes", read_only=False, storage="homes", beneath="/data/homes")
    ]


def test_it_mounts_the_users_default_storages_when_the_plugin_names_none(make_storage, user, default_vc):
    make_storage("default-share", is_default=True)
    make_storage("other")
    job = submit_job(user, v2_yaml("defaults", extra=teamwise()))
    assert [mount.storage for mount in task_mounts(user, job.spec)] == ["default-share"]


def test_it_honours_extras_storages_with_their_mount_paths(make_storage, user, default_vc):
    make_storage("team")
    extra = "extras:\n  storages:\n    - name: team\n      mountPath: /data\n"
    job = submit_job(user, v2_yaml("extras", extra=extra))
    assert [mount.container_path for mount in task_mounts(user, job.spec)] == ["/data"]


def test_it_mounts_nothing_for_a_job_that_asks_for_no_storage(make_storage, user, default_vc):
    make_storage("team", is_default=True)
    assert task_mounts(user, submit_job(user, v2_yaml("plain")).spec) == []


def test_it_applies_a_change_of_who_may_use_a_storage_at_once_in_this_process(make_storage, user, other_user):
    from jobs.storage.configs import usable_storages

    config = make_storage("team")
    assert [storage.name for storage in usable_storages(other_user)] == ["team"]  # read, and kept a while
    config.allowed_users.add(user)
    assert usable_storages(other_user) == []
    vc = VirtualCluster.objects.create(name="team-vc")
    config.virtual_clusters.add(vc)
    vc.allowed_users.add(other_user)
    assert [storage.name for storage in usable_storages(other_user)] == ["team"]
    config.delete()
    assert usable_storages(user) == []
