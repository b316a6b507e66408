"""Signing in with a real OpenLDAP directory (tests/ldap/conftest.py): users made at their first
sign-in, groups mirrored at each one, rights following the directory, local accounts beside it."""

from __future__ import annotations

import logging
import socket
import time
from collections.abc import Iterator
from typing import Any

import pytest
from django.contrib.auth import authenticate, get_user_model
from django.contrib.auth.models import Group
from rest_framework.test import APIClient

from accounts.groups import account_of
from accounts.models import Account, GroupInfo
from clusters.models import VirtualCluster
from jobs.actions import VirtualClusterForbidden, submit_job
from tests.factories import create_user, password_for, v2_yaml
from tests.ldap.conftest import GROUPS, POSIX_GROUPS, UNIQUE_GROUPS, password_of

pytestmark = [pytest.mark.slow, pytest.mark.django_db]

LOCAL_ONLY = ["django.contrib.auth.backends.ModelBackend"]
LDAP_ONLY = ["accounts.ldap.PortalLDAPBackend"]
ML_TEAM = f"cn=ml-team,{GROUPS}"
ADMIN_GROUP = f"cn=admingroup,{GROUPS}"


def sign_in(uid: str, password: str | None = None) -> Any:
    return authenticate(None, username=uid, password=password_of(uid) if password is None else password)


def group_names(user: Any) -> set[str]:
    return set(user.groups.values_list("name", flat=True))


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
def test_a_first_sign_in_on_the_login_page_makes_the_user_with_their_email_and_groups(
    directory, asgi_live_server, chromium, monkeypatch
):
    monkeypatch.setenv("DJANGO_ALLOW_ASYNC_UNSAFE", "true")
    assert not get_user_model().objects.filter(username="carol").exists()
    with chromium() as browser:
        page = browser.new_page(locale="en-US")
        page.goto(f"{asgi_live_server.url}/login/")
        page.fill("#id_username", "carol")
        page.fill("#id_password", password_of("carol"))
        page.click("button[type=submit]")
        page.wait_for_url(lambda url: "/login/" not in url)
        assert page.locator(".whoami").inner_text() == "carol"
    carol = get_user_model().objects.get(username="carol")
    assert (carol.email, carol.first_name, carol.last_name) == ("carol@example.org", "Carol", "Danvers")
    assert group_names(carol) == {"ml_team", "portal_users"}
    assert Account.objects.get(user=carol).source == Account.Source.LDAP


def test_the_api_login_with_the_directory_password_gives_a_token_that_works(directory):
    response = APIClient().post(
        "/api/v2/authn/basic/login", {"username": "carol", "password": password_of("carol")}, format="json"
    )
    assert response.status_code == 200, response.content
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {response.json()['token']}")
    me = client.get("/api/v2/users/carol")
    assert me.status_code == 200
    assert me.json()["email"] == "carol@example.org"
    assert "ml_team" in me.json()["grouplist"]


def test_a_directory_group_grants_a_vc_until_the_directory_takes_the_user_out_of_it(directory):
    carol = sign_in("carol")
    ml = VirtualCluster.objects.create(name="ml", share_percent=10)
    ml.allowed_groups.add(Group.objects.get(name="ml_team"))
    assert submit_job(carol, v2_yaml("in-the-team", vc="ml")).virtual_cluster == ml

    directory.remove_from_group(ML_TEAM, "carol")
    carol = sign_in("carol")
    assert "ml_team" not in group_names(carol)
    with pytest.raises(VirtualClusterForbidden, match="virtual cluster"):
        submit_job(carol, v2_yaml("out-of-the-team", vc="ml"))


def test_a_group_an_admin_named_after_the_directory_group_takes_its_members(directory):
    team = Group.objects.create(name="ml")
    GroupInfo.objects.create(group=team, external_name="ml-team")
    assert group_names(sign_in("carol")) == {"ml", "portal_users"}


def test_membership_of_the_directory_admingroup_makes_an_admin_and_leaving_it_unmakes_one(directory):
    erin = sign_in("erin")
    assert erin.is_staff and erin.is_superuser

    directory.remove_from_group(ADMIN_GROUP, "erin")
    erin = sign_in("erin")
    assert not erin.is_staff and not erin.is_superuser


def test_a_wrong_password_is_refused(directory):
    assert sign_in("carol", "not-carols-password") is None


def test_an_empty_password_is_refused_not_taken_for_an_anonymous_bind(directory):
    assert sign_in("carol", "") is None
    assert not get_user_model().objects.filter(username="carol").exists()


def test_a_user_the_directory_does_not_know_is_refused(directory):
    assert sign_in("mallory", "whatever-1") is None
    assert not get_user_model().objects.filter(username="mallory").exists()


def test_nothing_of_the_password_is_kept_or_logged(directory, caplog):
    caplog.set_level(logging.DEBUG)
    carol = sign_in("carol")
    assert sign_in("carol", "carols-wrong-guess") is None
    assert not carol.has_usable_password()
    assert password_of("carol") not in caplog.text and "carols-wrong-guess" not in caplog.text


def test_the_directory_groups_are_read_again_at_each_sign_in(directory):
    assert "admingroup" not in group_names(sign_in("carol"))
    directory.add_to_group(ADMIN_GROUP, "carol")
    carol = sign_in("carol")
    assert "admingroup" in group_names(carol) and carol.is_staff


@pytest.mark.parametrize(
    ("group_type", "base", "group"),
    [("groupOfUniqueNames", UNIQUE_GROUPS, "vision"), ("posixGroup", POSIX_GROUPS, "gpu_users")],
)
def test_each_group_type_is_mirrored(directory, settings, group_type, base, group):
    settings.PAI_LDAP_GROUP_TYPE, settings.PAI_LDAP_GROUP_SEARCH_BASE = group_type, base
    assert group_names(sign_in("carol")) == {group}


def test_a_required_group_keeps_everyone_else_out(directory, settings):
    settings.PAI_LDAP_REQUIRE_GROUP = f"cn=portal-users,{GROUPS}"
    assert sign_in("dave") is None
    assert sign_in("carol") is not None


def test_a_deactivated_account_is_refused_although_the_directory_knows_it(directory):
    carol = sign_in("carol")
    carol.is_active = False
    carol.save()
    assert sign_in("carol") is None


def test_a_local_user_still_signs_in_beside_the_directory(directory):
    alice = create_user("alice")
    assert authenticate(None, username="alice", password=password_for("alice")) == alice


def test_a_local_account_is_not_taken_over_by_the_directory_entry_of_the_same_name(directory):
    local_carol = create_user("carol")
    assert sign_in("carol") is None
    assert sign_in("carol", password_for("carol")) == local_carol
    assert local_carol.groups.count() == 0


def test_a_user_of_the_openid_provider_is_not_taken_over_by_the_directory(directory):
    carol = get_user_model().objects.create_user("carol")  # as an OpenID sign-in made her: no password
    account = account_of(carol)
    account.source = Account.Source.OIDC
    account.save()
    assert sign_in("carol") is None


def test_a_local_user_is_refused_when_local_accounts_are_off(directory, settings):
    create_user("alice")
    settings.AUTHENTICATION_BACKENDS = LDAP_ONLY
    assert authenticate(None, username="alice", password=password_for("alice")) is None
    assert sign_in("carol") is not None


@pytest.fixture
def silent_directory() -> Iterator[str]:
    """An address that accepts connections and never answers (a hung directory)."""
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(8)
        yield f"ldap://127.0.0.1:{listener.getsockname()[1]}"


def test_a_directory_that_does_not_answer_refuses_within_the_time_out(directory, settings, silent_directory):
    settings.PAI_LDAP_URI, settings.PAI_LDAP_TIMEOUT_SECONDS = silent_directory, 1.0
    create_user("alice")
    started = time.monotonic()
    assert sign_in("carol") is None
    assert time.monotonic() - started < 3


def test_a_directory_that_does_not_answer_does_not_hold_up_local_accounts(directory, settings, silent_directory):
    settings.PAI_LDAP_URI, settings.PAI_LDAP_TIMEOUT_SECONDS = silent_directory, 5.0
    create_user("alice")
    started = time.monotonic()
    assert authenticate(None, username="alice", password=password_for("alice")) is not None
    assert time.monotonic() - started < 1  # local passwords are checked first
