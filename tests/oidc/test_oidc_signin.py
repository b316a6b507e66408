"""Signing in with a real OpenID provider (tests/oidc/conftest.py) through the portal's pages:
users made at their first sign-in, groups mirrored at each one, rights following the provider,
and every way a sign-in fails ending on the error page, nobody signed in."""

from __future__ import annotations

from typing import Any
from urllib.parse import parse_qs, urlencode, urlsplit

import pytest
from django.contrib.auth import SESSION_KEY, get_user_model
from django.contrib.auth.models import Group
from django.test import Client

from accounts.groups import account_of
from accounts.models import Account, AuditEntry
from clusters.models import VirtualCluster
from jobs.actions import VirtualClusterForbidden, submit_job
from tests.factories import create_user, v2_yaml
from tests.oidc.conftest import CLIENT_ID, OidcProvider, WrongPassword

pytestmark = [pytest.mark.slow, pytest.mark.django_db]


def local(url: str) -> str:
    """The portal address as the test client asks for it: path and query."""
    parts = urlsplit(url)
    return f"{parts.path}?{parts.query}" if parts.query else parts.path


def start(client: Client, next_page: str = "") -> str:
    """The portal's /login/oidc/: the provider's authorization URL it redirects to."""
    response = client.get("/login/oidc/" + (f"?{urlencode({'next': next_page})}" if next_page else ""))
    assert response.status_code == 302, response.content
    return str(response["Location"])


def sign_in(client: Client, provider: OidcProvider, username: str = "carol", next_page: str = "") -> Any:
    """The whole flow: the portal, the provider's form, back to the portal's callback (its answer)."""
    return client.get(local(provider.sign_in(start(client, next_page), username)))


def group_names(user: Any) -> set[str]:
    return set(user.groups.values_list("name", flat=True))


def signed_in(client: Client) -> str | None:
    user_id = client.session.get(SESSION_KEY)
    return get_user_model().objects.get(pk=user_id).get_username() if user_id else None


def test_the_authorization_request_uses_pkce_s256_state_and_nonce(client, oidc_provider):
    query = parse_qs(urlsplit(start(client)).query)
    assert query["client_id"] == [CLIENT_ID]
    assert query["response_type"] == ["code"]
    assert query["code_challenge_method"] == ["S256"]
    assert query["code_challenge"][0] and query["state"][0] and query["nonce"][0]
    assert query["redirect_uri"] == ["http://testserver/login/oidc/callback/"]
    assert set(query["scope"][0].split()) == {"openid", "email", "profile"}


def test_a_first_sign_in_makes_the_user_with_their_email_and_groups(client, oidc_provider):
    response = sign_in(client, oidc_provider)
    assert response.status_code == 302 and response["Location"] == "/start/"
    assert signed_in(client) == "carol"
    carol = get_user_model().objects.get(username="carol")
    assert carol.email == "carol@example.org"
    assert not carol.has_usable_password()
    assert group_names(carol) == {"ml_team"}
    assert Account.objects.get(user=carol).source == Account.Source.OIDC
    assert AuditEntry.objects.filter(action="user.create", target="carol", detail__source="oidc").exists()


def test_signing_in_lands_on_the_page_asked_for_and_never_on_another_host(client, oidc_provider):
    assert sign_in(client, oidc_provider, next_page="/jobs/?mine=1")["Location"] == "/jobs/?mine=1"
    assert sign_in(Client(), oidc_provider, next_page="https://evil.example/")["Location"] == "/start/"


def test_a_wrong_password_is_refused_by_the_provider(client, oidc_provider):
    with pytest.raises(WrongPassword, match="Wrong user name or password"):
        oidc_provider.sign_in(start(client), "carol", password="not-her-password")
    assert not get_user_model().objects.filter(username="carol").exists()


def test_a_provider_group_grants_a_vc_until_the_provider_takes_the_user_out_of_it(client, oidc_provider):
    sign_in(client, oidc_provider)
    ml = VirtualCluster.objects.create(name="ml", share_percent=10)
    ml.allowed_groups.add(Group.objects.get(name="ml_team"))
    carol = get_user_model().objects.get(username="carol")
    assert submit_job(carol, v2_yaml("in-the-team", vc="ml")).virtual_cluster == ml

    oidc_provider.update("carol", groups=[])
    sign_in(Client(), oidc_provider)
    carol = get_user_model().objects.get(username="carol")
    assert group_names(carol) == set()
    with pytest.raises(VirtualClusterForbidden, match="virtual cluster"):
        submit_job(carol, v2_yaml("out-of-the-team", vc="ml"))


def test_membership_of_the_providers_admingroup_makes_an_admin_and_leaving_it_unmakes_one(client, oidc_provider):
    sign_in(client, oidc_provider, "erin")
    erin = get_user_model().objects.get(username="erin")
    assert erin.is_staff and erin.is_superuser

    oidc_provider.update("erin", groups=["ml-team"])
    sign_in(Client(), oidc_provider, "erin")
    erin.refresh_from_db()
    assert not erin.is_staff and not erin.is_superuser


def test_a_local_account_of_that_name_is_never_taken_over(client, oidc_provider):
    create_user("carol")  # with a portal password
    response = sign_in(client, oidc_provider)
    assert response.status_code == 403
    assert "carol is a local account of this portal" in response.content.decode()
    assert signed_in(client) is None


def test_a_user_of_the_ldap_directory_is_not_taken_over_either(client, oidc_provider):
    carol = get_user_model().objects.create_user("carol")  # as an LDAP sign-in made her: no password
    account = account_of(carol)
    account.source = Account.Source.LDAP
    account.save()
    response = sign_in(client, oidc_provider)
    assert response.status_code == 403 and signed_in(client) is None


def test_the_next_sign_in_is_the_same_user_with_the_email_the_provider_says_now(client, oidc_provider):
    sign_in(client, oidc_provider)
    oidc_provider.update("carol", email="carol.danvers@example.org")
    sign_in(Client(), oidc_provider)
    carol = get_user_model().objects.get(username="carol")
    assert carol.email == "carol.danvers@example.org"


def test_without_the_username_claim_the_email_names_the_user(client, oidc_provider, settings):
    settings.PAI_OIDC_USERNAME_CLAIM = "nickname"
    oidc_provider.update("carol", email="carol.d@example.org")
    sign_in(client, oidc_provider)
    assert signed_in(client) == "carol.d"


def test_an_email_the_provider_has_not_verified_names_no_user(client, oidc_provider, settings):
    settings.PAI_OIDC_USERNAME_CLAIM = "nickname"
    oidc_provider.update("carol", email="root@example.org", email_verified=False)
    response = sign_in(client, oidc_provider)
    assert response.status_code == 400
    assert "the provider named no user" in response.content.decode()
    assert not get_user_model().objects.exists()


def test_a_username_claim_that_is_no_user_name_ends_on_the_error_page(client, oidc_provider):
    oidc_provider.update("carol", preferred_username="carol danvers!")
    response = sign_in(client, oidc_provider)
    assert response.status_code == 400
    assert "“carol danvers!” cannot be a user name here" in response.content.decode()
    assert signed_in(client) is None
    assert not get_user_model().objects.exists()


def test_a_deactivated_user_is_refused(client, oidc_provider):
    sign_in(Client(), oidc_provider)
    get_user_model().objects.filter(username="carol").update(is_active=False)
    response = sign_in(client, oidc_provider)
    assert response.status_code == 403
    assert "deactivated" in response.content.decode()
    assert signed_in(client) is None


def test_cancelling_at_the_provider_ends_on_the_error_page_with_a_link_back(client, oidc_provider):
    response = client.get(local(oidc_provider.cancel(start(client))))
    assert response.status_code == 403
    page = response.content.decode()
    assert "Sign-in with 127.0.0.1 failed: access_denied" in page
    assert 'href="/login/"' in page
    assert signed_in(client) is None


def test_a_callback_whose_state_this_session_did_not_start_is_refused(client, oidc_provider):
    back = oidc_provider.sign_in(start(Client()), "carol")  # another browser's sign-in
    response = client.get(local(back))
    assert response.status_code == 400
    assert "state does not match" in response.content.decode()
    assert signed_in(client) is None
    assert not get_user_model().objects.exists()


def test_a_callback_is_used_once(client, oidc_provider):
    back = local(oidc_provider.sign_in(start(client), "carol"))
    assert client.get(back).status_code == 302
    client.logout()
    assert client.get(back).status_code == 400
