"""Groups in OpenPAI's shapes (microsoft/pai src/rest-server/src/routes/v2/group.js, the group
routes of routes/v2/user.js, controllers/v2/group.js): a group grants VCs and storages, makes
admins with acls.admin, and every change lands in the audit list."""

from typing import Any

import pytest
from django.contrib.auth.models import Group

from accounts.models import AuditEntry
from clusters.models import VirtualCluster
from tests.api.conftest import bearer_client
from tests.factories import v2_yaml

pytestmark = pytest.mark.django_db

# OpenPAI's rest-server route list for groups (method, path), as its routers declare them.
OPENPAI_GROUP_ROUTES = [
    ("get", "/api/v2/groups"),
    ("post", "/api/v2/groups"),
    ("put", "/api/v2/groups"),
    ("get", "/api/v2/groups/ml"),
    ("delete", "/api/v2/groups/ml"),
    ("get", "/api/v2/groups/ml/userlist"),
    ("put", "/api/v2/groups/ml/extension"),
    ("put", "/api/v2/groups/ml/description"),
    ("put", "/api/v2/groups/ml/externalname"),
    ("get", "/api/v2/group"),
    ("get", "/api/v2/group/ml"),
    ("put", "/api/v2/users/alice/group"),
    ("delete", "/api/v2/users/alice/group"),
    ("put", "/api/v2/users/alice/grouplist"),
]


@pytest.fixture
def ml_vc(db):
    return VirtualCluster.objects.create(name="ml")


@pytest.fixture
def ml_group(root, ml_vc):
    answer = root.post(
        "/api/v2/groups",
        {
            "groupname": "ml",
            "description": "Machine learning",
            "externalName": "cn=ml,ou=groups",
            "extension": {"acls": {"admin": False, "virtualClusters": ["ml"], "storageConfigs": []}},
        },
        format="json",
    )
    assert answer.status_code == 201, answer.json()
    return Group.objects.get(name="ml")


@pytest.mark.parametrize(("method", "path"), OPENPAI_GROUP_ROUTES)
def test_every_openpai_group_route_answers(root, user, other_user, ml_group, method, path):
    VirtualCluster.objects.get(name="ml").allowed_users.add(other_user)  # the group may go
    body: dict[str, Any] = {
        "groupname": "ml",
        "grouplist": ["ml"],
        "extension": {},
        "description": "",
        "externalName": "",
    }
    if method == "post":
        body = {"groupname": "other"}
    if method == "put" and path == "/api/v2/groups":
        body = {"data": {"groupname": "ml", "description": "d"}, "patch": True}
    answer = getattr(root, method)(path, body, format="json")
    assert answer.status_code in (200, 201), (path, answer.json())


def test_it_lists_a_group_in_openpais_shape(alice, ml_group):
    assert alice.get("/api/v2/groups/ml").json() == {
        "groupname": "ml",
        "description": "Machine learning",
        "externalName": "cn=ml,ou=groups",
        "extension": {"acls": {"admin": False, "virtualClusters": ["ml"], "storageConfigs": []}},
    }


def test_a_group_grants_its_vc_to_its_members_only(root, alice, bob, user, ml_group, submit_yaml):
    assert submit_yaml(v2_yaml("before", vc="ml")).status_code == 403
    assert root.put("/api/v2/users/alice/group", {"groupname": "ml"}, format="json").status_code == 201
    assert submit_yaml(v2_yaml("after", vc="ml")).status_code == 202
    assert submit_yaml(v2_yaml("bobs", vc="ml"), client=bob).status_code == 403
    assert "ml" in alice.get("/api/v2/users/alice").json()["virtualCluster"]


def test_taking_a_user_out_of_the_group_takes_the_vc_away(root, user, ml_group, submit_yaml):
    root.put("/api/v2/users/alice/grouplist", {"grouplist": ["ml"]}, format="json")
    root.delete("/api/v2/users/alice/group", {"groupname": "ml"}, format="json")
    assert submit_yaml(v2_yaml("gone", vc="ml")).status_code == 403


def test_an_admin_group_makes_admins_and_leaving_it_unmakes_them(root, user, ml_group):
    root.put("/api/v2/groups/ml/extension", {"extension": {"acls": {"admin": True}}}, format="json")
    root.put("/api/v2/users/alice/group", {"groupname": "ml"}, format="json")
    user.refresh_from_db()
    assert user.is_staff and user.is_superuser
    assert root.get("/api/v2/groups/ml/userlist").json() == [{"username": "alice", "clusterAdmin": True}]
    root.delete("/api/v2/users/alice/group", {"groupname": "ml"}, format="json")
    user.refresh_from_db()
    assert not user.is_staff and not user.is_superuser


def test_it_lists_a_users_groups_in_grouplist(root, alice, ml_group):
    root.put("/api/v2/users/alice/grouplist", {"grouplist": ["ml"]}, format="json")
    assert alice.get("/api/v2/users/alice").json()["grouplist"] == ["ml"]


def test_it_refuses_changes_from_non_admins_and_application_tokens(alice, admin_user, ml_group):
    assert alice.delete("/api/v2/groups/ml").status_code == 403
    script = bearer_client(admin_user, kind="application")
    assert script.delete("/api/v2/groups/ml").status_code == 403
    assert Group.objects.filter(name="ml").exists()


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"groupname": "bad name"}, "groupname"),
        ({"groupname": "x", "extension": {"acls": {"virtualClusters": ["nope"]}}}, "extension.acls.virtualClusters"),
    ],
)
def test_it_names_the_field_of_a_refused_group(root, body, field):
    answer = root.post("/api/v2/groups", body, format="json")
    assert answer.status_code in (400, 404)
    assert answer.json()["message"].startswith(field), answer.json()
    assert not Group.objects.filter(name=body["groupname"]).exists()


def test_it_refuses_an_unknown_group_in_a_grouplist(root, user):
    answer = root.put("/api/v2/users/alice/grouplist", {"grouplist": ["nope"]}, format="json")
    assert answer.status_code == 404 and answer.json()["code"] == "NoGroupError"


def test_each_change_is_in_the_audit_list(root, user, ml_group):
    root.put("/api/v2/users/alice/group", {"groupname": "ml"}, format="json")
    root.put("/api/v2/groups/ml/description", {"description": "ML"}, format="json")
    actions = list(AuditEntry.objects.order_by("id").values_list("actor_name", "action", "target"))
    assert actions == [
        ("root", "group.create", "ml"),
        ("root", "group.grants", "ml"),
        ("root", "user.groups", "alice"),
        ("root", "group.update", "ml"),
    ]


def test_the_legacy_admin_route_sets_the_flag_by_hand(root, user):
    assert root.put("/api/v2/users/alice/admin", {"admin": True}, format="json").status_code == 201
    user.refresh_from_db()
    assert user.is_staff and AuditEntry.objects.filter(action="user.update", target="alice").exists()


def test_an_admin_cannot_take_their_own_rights_through_the_api(root, admin_user):
    answer = root.put("/api/v2/users/root/admin", {"admin": False}, format="json")
    assert answer.status_code == 400 and answer.json()["message"].startswith("admin:")
    admin_user.refresh_from_db()
    assert admin_user.is_staff


def test_the_legacy_virtualcluster_route_grants_a_restricted_vc_to_the_user_alone(root, alice, user, ml_group):
    assert root.put("/api/v2/users/alice/virtualcluster", {"virtualCluster": ["ml"]}, format="json").status_code == 201
    assert "ml" in alice.get("/api/v2/users/alice").json()["virtualCluster"]
    answer = root.put("/api/v2/users/alice/virtualcluster", {"virtualCluster": ["nope"]}, format="json")
    assert answer.status_code == 404 and answer.json()["code"] == "NoVirtualClusterError"


def test_it_refuses_to_open_a_vc_to_everyone_by_deleting_its_only_group(root, ml_group):
    answer = root.delete("/api/v2/groups/ml")
    assert answer.status_code == 400
    assert answer.json()["message"].startswith("extension.acls.virtualClusters: ml names only the group ml")
    assert Group.objects.filter(name="ml").exists()


def test_it_refuses_to_take_a_vcs_only_group_away_and_keeps_the_rest_unchanged(root, ml_group):
    body = {"data": {"groupname": "ml", "description": "new", "extension": {"acls": {"virtualClusters": []}}}}
    answer = root.put("/api/v2/groups", {**body, "patch": True}, format="json")
    assert answer.status_code == 400
    assert root.get("/api/v2/groups/ml").json()["description"] == "Machine learning"


def test_a_group_is_deleted_when_its_vc_names_someone_else_too(root, other_user, ml_group):
    VirtualCluster.objects.get(name="ml").allowed_users.add(other_user)
    assert root.delete("/api/v2/groups/ml").status_code == 200
    assert not Group.objects.filter(name="ml").exists()
