"""`/api/v2/storages` in OpenPAI's shapes: the storages the user may use, their defaults, one in detail."""

from __future__ import annotations

import pytest

from tests.factories import create_storage as make_storage

pytestmark = pytest.mark.django_db


def test_it_lists_the_storages_the_user_may_use_with_their_default_flag(alice, other_user):
    make_storage("team", is_default=True)
    make_storage("scratch", kind="hostPath", server="", path="/scratch", per_user=True)
    make_storage("private").allowed_users.add(other_user)
    assert alice.get("/api/v2/storages").json() == {
        "storages": [
            {"name": "scratch", "share": False, "volumeName": "scratch", "default": False},
            {"name": "team", "share": True, "volumeName": "team", "default": True},
        ]
    }


def test_it_lists_only_the_users_default_storages_when_asked(alice):
    make_storage("team", is_default=True)
    make_storage("other")
    assert [s["name"] for s in alice.get("/api/v2/storages?default=true").json()["storages"]] == ["team"]


def test_it_shows_one_storage_with_its_server_path_and_options(alice):
    make_storage("team", mount_options="nfsvers=4.1,soft", read_only=True)
    assert alice.get("/api/v2/storages/team").json() == {
        "name": "team",
        "share": True,
        "volumeName": "team",
        "default": False,
        "type": "nfs",
        "data": {"server": "10.0.0.5", "path": "/export/team"},
        "readOnly": True,
        "mountOptions": ["nfsvers=4.1", "soft"],
        "mountPath": "/mnt/team",
    }


def test_it_answers_no_storage_error_for_an_unknown_name(alice, db):
    response = alice.get("/api/v2/storages/nosuch")
    assert (response.status_code, response.json()["code"]) == (404, "NoStorageError")


def test_it_refuses_a_storage_the_user_may_not_use(alice, other_user):
    make_storage("private").allowed_users.add(other_user)
    response = alice.get("/api/v2/storages/private")
    assert (response.status_code, response.json()["code"]) == (403, "ForbiddenUserError")


def test_it_lists_the_users_storages_in_their_user_row(alice):
    make_storage("team")
    assert alice.get("/api/v2/users/alice").json()["storageConfig"] == ["team"]
