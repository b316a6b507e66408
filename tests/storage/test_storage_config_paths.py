"""Admin storage configs cannot hand tasks the machine itself: no host path on `/`, a system
directory or the portal's own files; no mount point over /proc, /sys or /dev; NFS options only
from a list of known names with checked values (issue 27, item 9)."""

from __future__ import annotations

import pytest
from django.conf import settings
from django.core.exceptions import ValidationError

from clusters.models import StorageConfig

pytestmark = pytest.mark.django_db


def field_errors(**fields) -> dict[str, list[str]]:
    config = StorageConfig(**{"name": "bad", "kind": "hostPath", "path": "/srv/data", **fields})
    try:
        config.full_clean()
    except ValidationError as error:
        return error.message_dict
    return {}


@pytest.mark.parametrize(
    "path",
    [
        "/",
        "//",
        "/etc",
        "/etc/ssl",
        "/usr/local/lib",
        "/bin",
        "/boot",
        "/lib64",
        "/root",
        "/root/.ssh",
        "/run",
        "/run/docker.sock",
        "/sbin",
        "/sys/fs/cgroup",
        "/proc",
        "/proc/1/root",
        "/dev/sda",
        "/var",
        "/var/lib/docker",
        "/var/run",
        "/srv/../etc",
    ],
)
def test_it_refuses_a_host_path_on_the_machines_own_directories(path):
    assert "path" in field_errors(path=path)


def test_it_refuses_a_host_path_inside_or_around_the_portals_files():
    var_dir = str(settings.VAR_DIR)
    assert "path" in field_errors(path=var_dir)
    assert "path" in field_errors(path=f"{var_dir}/fs")
    assert "path" in field_errors(path=str(settings.BASE_DIR))
    assert "path" in field_errors(path=str(settings.BASE_DIR.parent))


def test_it_refuses_a_portal_path_on_the_portals_own_files():
    assert "portal_path" in field_errors(kind="nfs", server="10.0.0.5", path="/export/x", portal_path="/etc")


@pytest.mark.parametrize("path", ["/srv/data", "/data/team", "/mnt/shared", "/home/shared", "/var/nfs/team", "/tmp/x"])
def test_it_takes_a_host_path_of_its_own(path):
    assert field_errors(path=path) == {}


@pytest.mark.parametrize("mount_path", ["/", "/proc", "/proc/sys", "/sys", "/sys/kernel", "/dev", "/dev/shm", "//proc"])
def test_it_refuses_a_mount_point_over_the_kernels_files(mount_path):
    assert "mount_path" in field_errors(mount_path=mount_path)


@pytest.mark.parametrize(
    ("options", "says"),
    [
        ("addr =x", "no spaces or line breaks"),
        ("nfsvers=4.1\nsoft", "no spaces or line breaks"),
        ("nfsvers=4.1,addr=1.2.3.4", "set by the portal"),
        ("rw", "set by the portal"),
        ("suid", "unknown NFS option suid"),
        ("context=system_u:object_r:x", "unknown NFS option context"),
        ("nfsvers=5", "nfsvers must be one of"),
        ("rsize=big", "rsize must be a number"),
        ("port=70000", "port must be a number"),
        ("proto=sctp", "proto must be one of"),
        ("sec=plain", "sec must be one of"),
        ("soft=1", "soft takes no value"),
        ("nfsvers", "nfsvers needs a value"),
        ("soft,,hard", "an empty option"),
    ],
)
def test_it_refuses_nfs_options_it_does_not_know_or_whose_values_are_wrong(options, says):
    errors = field_errors(kind="nfs", server="10.0.0.5", path="/export/x", mount_options=options)
    assert any(says in message for message in errors["mount_options"]), errors


@pytest.mark.parametrize(
    "options",
    [
        "nfsvers=4.1,soft",
        "vers=3,proto=tcp,port=2049,rsize=1048576,wsize=1048576",
        "hard,timeo=600,retrans=2",
        "noatime,nolock,actimeo=30,sec=krb5p",
        "nconnect=4,lookupcache=positive,local_lock=none",
    ],
)
def test_it_takes_common_nfs_options(options):
    assert field_errors(kind="nfs", server="10.0.0.5", path="/export/x", mount_options=options) == {}


def test_it_refuses_a_server_with_a_line_break():
    assert "server" in field_errors(kind="nfs", server="10.0.0.5\nx", path="/export/x")


def test_the_admin_form_names_the_refused_host_path(admin_client):
    form = {
        "name": "rootfs",
        "kind": "hostPath",
        "path": "/",
        "server": "",
        "mount_options": "",
        "mount_path": "",
        "portal_path": "",
    }
    page = admin_client.post("/admin/clusters/storageconfig/add/", form).content.decode()
    assert "errorlist" in page and "the whole machine" in page
    assert not StorageConfig.objects.filter(name="rootfs").exists()
