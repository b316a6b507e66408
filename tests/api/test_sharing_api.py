"""Sharing through the API (issue 50): `sharedWithGroup` on `/api/v2/templates` (POST, PATCH by the
owner) and `PATCH /api/v2/apps/<slug>`; a group's member reads and uses, never changes; carol, in no
group of alice's, gets 404 as for something that does not exist."""

import pytest

from jobs import job_templates
from jobs.models import InteractiveApp
from tests.api.conftest import bearer_client
from tests.factories import create_live_app, v2_yaml

pytestmark = pytest.mark.django_db


@pytest.fixture
def carol(stranger):
    return bearer_client(stranger)


def test_it_saves_a_template_shared_with_a_group_of_the_owners(alice, bob, team):
    made = alice.post(
        "/api/v2/templates", {"name": "t", "config": v2_yaml("a"), "sharedWithGroup": "vision"}, format="json"
    )
    assert made.status_code == 201 and made.json()["sharedWithGroup"] == "vision"
    [listed] = bob.get("/api/v2/templates").json()
    assert (listed["name"], listed["username"], listed["sharedWithGroup"]) == ("t", "alice", "vision")


def test_it_refuses_a_group_the_owner_is_not_in_naming_the_field(alice, stranger):
    from django.contrib.auth.models import Group

    Group.objects.create(name="others").user_set.add(stranger)
    answer = alice.post(
        "/api/v2/templates", {"name": "t", "config": v2_yaml("a"), "sharedWithGroup": "others"}, format="json"
    )
    assert answer.status_code == 400
    assert answer.json()["field"] == "sharedWithGroup"
    assert answer.json()["errors"][0]["code"] == "template.share_group"


def test_the_owner_patches_a_saved_template_changing_only_the_fields_given(alice, bob, user, team):
    template = job_templates.save(user, name="t", config_text=v2_yaml("a"), summary="kept")
    changed = alice.patch(
        f"/api/v2/templates/{template.pk}", {"sharedWithGroup": "vision", "name": "t2"}, format="json"
    )
    assert changed.status_code == 200
    assert (changed.json()["name"], changed.json()["summary"], changed.json()["sharedWithGroup"]) == (
        "t2",
        "kept",
        "vision",
    )
    assert bob.get(f"/api/v2/templates/{template.pk}").status_code == 200
    assert (
        alice.patch(f"/api/v2/templates/{template.pk}", {"sharedWithGroup": None}, format="json").json()[
            "sharedWithGroup"
        ]
        is None
    )
    assert bob.get(f"/api/v2/templates/{template.pk}").status_code == 404


def test_a_member_may_not_patch_or_delete_a_shared_template_and_a_stranger_finds_none(alice, bob, carol, user, team):
    template = job_templates.save(user, name="t", config_text=v2_yaml("a"), shared_with_group="vision")
    assert bob.patch(f"/api/v2/templates/{template.pk}", {"sharedWithGroup": None}, format="json").status_code == 403
    assert bob.delete(f"/api/v2/templates/{template.pk}").status_code == 403
    assert carol.get(f"/api/v2/templates/{template.pk}").status_code == 404
    assert carol.patch(f"/api/v2/templates/{template.pk}", {"name": "x"}, format="json").status_code == 404
    assert carol.get("/api/v2/templates").json() == []
    template.refresh_from_db()
    assert (template.name, template.shared_with_group_id) == ("t", team.pk)


def test_the_owner_shares_an_app_with_a_group_whose_members_list_it_as_shared(alice, bob, carol, user, team):
    app = create_live_app(user, "notebook", idle_minutes=1)
    shared = alice.patch(f"/api/v2/apps/{app.slug}", {"sharedWithGroup": "vision"}, format="json")
    assert shared.status_code == 200
    assert (shared.json()["sharedWithGroup"], shared.json()["sharedBy"]) == ("vision", None)
    [listed] = bob.get("/api/v2/apps").json()
    assert (listed["job"], listed["sharedBy"], listed["slug"]) == ("alice~notebook", "alice", app.slug)
    assert carol.get("/api/v2/apps").json() == []
    assert bob.get(f"/api/v2/apps/{app.slug}").json()["sharedBy"] == "alice"
    assert carol.get(f"/api/v2/apps/{app.slug}").status_code == 404


def test_a_member_may_not_reshare_an_app_and_a_stranger_finds_none(alice, bob, carol, user, team):
    app = create_live_app(user, "notebook", idle_minutes=1, shared_with_group=team)
    assert bob.patch(f"/api/v2/apps/{app.slug}", {"sharedWithGroup": None}, format="json").status_code == 403
    assert carol.patch(f"/api/v2/apps/{app.slug}", {"sharedWithGroup": None}, format="json").status_code == 404
    assert alice.patch(f"/api/v2/apps/{app.slug}", {"sharedWithGroup": "nope"}, format="json").status_code == 400
    assert InteractiveApp.objects.get().shared_with_group == team


def test_it_drops_an_app_from_a_members_list_once_they_leave_the_group(bob, other_user, user, team):
    create_live_app(user, "notebook", idle_minutes=1, shared_with_group=team)
    assert len(bob.get("/api/v2/apps").json()) == 1
    team.user_set.remove(other_user)
    assert bob.get("/api/v2/apps").json() == []
