"""An NFS storage becomes a named `local` volume with type=nfs: the node's engine mounts the export
itself when the task starts (units: the options the engine gets)."""

from __future__ import annotations

from clusters.executors.base import Failure, Mount, NfsVolume
from clusters.executors.docker_mounts import docker_mount, nfs_volume_name, nfs_volume_options
from jobs.protocol.exitspec import ExitCode
from scheduling.exits import platform_exit_code

EXPORT = NfsVolume(server="10.0.0.5", export="/export/homes/alice", options="nfsvers=4.1, soft")


def test_it_gives_the_engine_the_server_export_and_options():
    assert nfs_volume_options(EXPORT, read_only=True) == {
        "type": "nfs",
        "o": "addr=10.0.0.5,ro,nfsvers=4.1,soft",
        "device": ":/export/homes/alice",
    }


def test_it_names_one_volume_per_export_and_options_in_the_portals_namespace():
    same = nfs_volume_name(EXPORT, False, "pai")
    assert same == nfs_volume_name(NfsVolume("10.0.0.5", "/export/homes/alice", "nfsvers=4.1, soft"), False, "pai")
    assert same.startswith("pai-nfs-")
    assert same != nfs_volume_name(EXPORT, True, "pai")
    assert same != nfs_volume_name(NfsVolume("10.0.0.5", "/export/homes/bob", "nfsvers=4.1"), False, "pai")


def test_it_mounts_an_nfs_storage_as_a_local_volume_and_a_host_path_as_a_bind():
    nfs = docker_mount(Mount("", "/mnt/homes/alice", read_only=False, nfs=EXPORT), "pai")
    assert (nfs["Type"], nfs["Target"], nfs["VolumeOptions"]["DriverConfig"]["Name"]) == (
        "volume",
        "/mnt/homes/alice",
        "local",
    )
    bind = docker_mount(Mount("/data/team", "/mnt/team"), "pai")
    assert (bind["Type"], bind["Source"], bind["ReadOnly"]) == ("bind", "/data/team", True)


def test_it_reports_a_storage_that_cannot_be_mounted_with_its_own_exit_code():
    assert platform_exit_code(Failure.STORAGE_MOUNT_FAILED) == ExitCode.STORAGE_MOUNT_FAILED == -1210
