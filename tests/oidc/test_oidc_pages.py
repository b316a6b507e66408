"""The sign-in page's provider button, the pages of the flow open before signing in, and signing
out: an OpenID Connect user's goes on to the provider's logout, a local user's as before."""

from __future__ import annotations

from urllib.parse import parse_qs, urlsplit

import pytest
from django.contrib.auth import SESSION_KEY
from django.test import Client

from tests.factories import create_user
from tests.oidc.test_oidc_signin import sign_in

pytestmark = pytest.mark.django_db


@pytest.fixture
def configured(settings):
    """A provider configured but never called (for the pages that do not reach it)."""
    settings.PAI_OIDC_ISSUER = "http://127.0.0.1:9"
    settings.PAI_OIDC_CLIENT_ID = "pai-portal"
    settings.AUTHENTICATION_BACKENDS = [*settings.AUTHENTICATION_BACKENDS, "accounts.oidc.OidcBackend"]


def test_the_sign_in_page_shows_the_providers_button_keeping_the_next_page(client, configured):
    page = client.get("/login/?next=/jobs/%3Fmine%3D1").content.decode()
    assert 'id="oidc-sign-in" href="/login/oidc/?next=/jobs/%3Fmine%3D1">Sign in with single sign-on</a>' in page
    assert 'id="id_password"' in page


def test_the_button_says_what_pai_oidc_button_says(client, configured, settings):
    settings.PAI_OIDC_BUTTON = "Sign in with Keycloak"
    assert ">Sign in with Keycloak</a>" in client.get("/login/").content.decode()


def test_without_a_provider_the_sign_in_page_has_no_button_and_its_routes_are_not_found(client, settings):
    settings.PAI_OIDC_ISSUER = ""
    assert "oidc-sign-in" not in client.get("/login/").content.decode()
    assert client.get("/login/oidc/").status_code == 404
    assert client.get("/login/oidc/callback/?state=x&code=y").status_code == 404


def test_without_a_password_backend_the_sign_in_page_has_only_the_button(client, configured, settings):
    settings.PAI_LOCAL_ACCOUNTS, settings.PAI_LDAP_URI = False, ""
    page = client.get("/login/").content.decode()
    assert 'id="oidc-sign-in"' in page
    assert 'id="id_password"' not in page


def test_a_provider_that_does_not_answer_ends_on_the_error_page(client, configured):
    response = client.get("/login/oidc/")
    assert response.status_code == 502
    assert "Sign-in with 127.0.0.1 failed: the provider did not answer" in response.content.decode()


def test_a_local_users_sign_out_still_lands_on_the_sign_in_page(client, configured):
    client.force_login(create_user("alice"))
    response = client.post("/logout/")
    assert (response.status_code, response["Location"]) == (302, "/login/")
    assert SESSION_KEY not in client.session


@pytest.mark.slow
def test_an_oidc_users_sign_out_goes_on_to_the_providers_logout_with_the_id_token(client, oidc_provider):
    sign_in(client, oidc_provider)
    id_token = client.session["oidc_id_token"]
    response = client.post("/logout/")
    assert SESSION_KEY not in client.session
    assert response.status_code == 302
    target = urlsplit(response["Location"])
    assert f"{target.scheme}://{target.netloc}{target.path}" == f"{oidc_provider.issuer}/session/end"
    query = parse_qs(target.query)
    assert query["id_token_hint"] == [id_token]
    assert query["post_logout_redirect_uri"] == ["http://testserver/login/"]
    assert query["client_id"] == ["pai-portal"]


@pytest.mark.slow
def test_the_oidc_pages_are_open_to_anyone_signed_out(oidc_provider):
    anonymous = Client()
    assert anonymous.get("/login/oidc/")["Location"].startswith(oidc_provider.issuer)
    assert anonymous.get("/login/oidc/callback/?state=unknown&code=x").status_code == 400
