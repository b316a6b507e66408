"""My apps with sharing (issue 50): the owner shares an app with one of their groups from the page;
a member finds it in their My apps marked "shared by alice", with Open and without Stop or the
job's link; carol, in no group of alice's, neither sees nor shares it."""

import pytest
from django.test import Client

from jobs.models import InteractiveApp
from tests.factories import create_live_app

pytestmark = pytest.mark.django_db


@pytest.fixture
def carol_client(stranger) -> Client:
    client = Client()
    client.force_login(stranger)
    return client


def test_the_owner_shares_an_app_with_a_group_from_the_page(alice_client, user, team, default_vc):
    app = create_live_app(user, "notebook", idle_minutes=1)
    page = alice_client.get("/apps/").content.decode()
    assert f'action="/apps/{app.slug}/share/"' in page and '<option value="vision" >group vision</option>' in page
    answer = alice_client.post(f"/apps/{app.slug}/share/", {"group": "vision"}, follow=True)
    assert "Group vision&#x27;s members may open notebook&#x27;s app now." in answer.content.decode()
    assert InteractiveApp.objects.get().shared_with_group == team


def test_a_member_sees_a_shared_app_marked_with_its_owner_and_no_stop(bob_client, user, team, default_vc):
    app = create_live_app(user, "notebook", idle_minutes=1, shared_with_group=team)
    page = bob_client.get("/apps/").content.decode()
    assert 'data-app-job="alice~notebook"' in page
    assert "shared by alice" in page
    assert f'href="/apps/{app.slug}/open/"' in page
    assert "data-app-stop" not in page and 'href="/jobs/alice~notebook/' not in page
    assert "data-app-share>" not in page  # (no share form: the app is not his)


def test_a_user_outside_the_group_neither_sees_nor_shares_the_app(carol_client, user, team, default_vc):
    app = create_live_app(user, "notebook", idle_minutes=1, shared_with_group=team)
    assert "alice~notebook" not in carol_client.get("/apps/").content.decode()
    assert carol_client.post(f"/apps/{app.slug}/share/", {"group": ""}).status_code == 404
    assert InteractiveApp.objects.get().shared_with_group == team


def test_a_member_may_not_unshare_the_app(bob_client, user, team, default_vc):
    app = create_live_app(user, "notebook", idle_minutes=1, shared_with_group=team)
    assert bob_client.post(f"/apps/{app.slug}/share/", {"group": ""}).status_code == 404
    assert InteractiveApp.objects.get().shared_with_group == team


def test_the_owner_may_share_only_with_a_group_of_theirs(alice_client, user, stranger, default_vc):
    from django.contrib.auth.models import Group

    Group.objects.create(name="others").user_set.add(stranger)
    app = create_live_app(user, "notebook", idle_minutes=1)
    answer = alice_client.post(f"/apps/{app.slug}/share/", {"group": "others"}, follow=True)
    assert "you are in no group named" in answer.content.decode()
    assert InteractiveApp.objects.get().shared_with_group is None


def test_the_owner_unshares_the_app(alice_client, bob_client, user, team, default_vc):
    app = create_live_app(user, "notebook", idle_minutes=1, shared_with_group=team)
    alice_client.post(f"/apps/{app.slug}/share/", {"group": ""})
    assert InteractiveApp.objects.get().shared_with_group is None
    assert "alice~notebook" not in bob_client.get("/apps/").content.decode()
