"""OpenPAI's OpenID Connect routes: /api/v{1,2}/authn/info says how to sign in, authn/oidc/login
goes through the provider and back to the client's redirect_uri with a new login token (only an
address of the portal's own, or one the admin listed), authn/oidc/logout to the provider's logout."""

from __future__ import annotations

from urllib.parse import parse_qs, urlencode, urlsplit

import pytest
from django.test import Client
from rest_framework.test import APIClient

from tests.oidc.test_oidc_signin import local

pytestmark = [pytest.mark.slow, pytest.mark.django_db]


def api_login(client: Client, redirect_uri: str, **extra: str):
    return client.get(f"/api/v1/authn/oidc/login?{urlencode({'redirect_uri': redirect_uri, **extra})}")


@pytest.mark.parametrize("prefix", ["/api/v1", "/api/v2", "/rest-server/api/v1"])
def test_authn_info_answers_oidc_when_a_provider_is_configured(oidc_provider, prefix):
    assert Client().get(f"{prefix}/authn/info").json() == {
        "authn_type": "OIDC",
        "loginURI": "/api/v1/authn/oidc/login",
        "loginURIMethod": "get",
    }


def test_the_api_root_names_oidc_as_its_authn_method_too(settings):
    settings.PAI_OIDC_ISSUER = "https://sso.example.org/realms/pai"  # (nothing is asked of it)
    assert Client().get("/api/v1").json()["authnMethod"] == "OIDC"


def test_authn_info_answers_basic_without_a_provider(settings):
    settings.PAI_OIDC_ISSUER = ""
    assert Client().get("/api/v2/authn/info").json()["authn_type"] == "basic"
    assert Client().get("/api/v1/authn/oidc/login?redirect_uri=/").json()["code"] == "InvalidParametersError"


def test_the_api_login_lands_on_the_redirect_uri_with_a_token_that_works(client, oidc_provider):
    to_provider = api_login(client, "http://testserver/somewhere?tab=1", **{"from": "webportal"})
    assert to_provider.status_code == 302
    assert to_provider["Location"].startswith(oidc_provider.issuer)
    landing = client.get(local(oidc_provider.sign_in(to_provider["Location"], "carol")))
    assert landing.status_code == 302
    target = urlsplit(landing["Location"])
    assert (target.scheme, target.netloc, target.path) == ("http", "testserver", "/somewhere")
    query = parse_qs(target.query)
    assert (query["tab"], query["user"], query["admin"], query["from"]) == (["1"], ["carol"], ["false"], ["webportal"])
    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=f"Bearer {query['token'][0]}")
    me = api.get("/api/v2/users/carol")
    assert me.status_code == 200, me.content
    assert me.json()["email"] == "carol@example.org"


@pytest.mark.parametrize(
    "redirect_uri",
    [
        "https://evil.example/steal",
        "//evil.example/steal",
        "http://testserver.evil.example/",
        "http://testserver@evil.example/",
        "https://testserver/",  # another scheme is another origin
        "javascript:alert(1)",
        "",
    ],
)
def test_a_redirect_uri_off_the_portal_is_refused(client, oidc_provider, redirect_uri):
    response = api_login(client, redirect_uri)
    assert response.status_code == 400
    assert response.json()["code"] == "InvalidParametersError"


def test_an_address_listed_in_pai_oidc_redirect_uris_may_be_the_redirect_uri(client, oidc_provider, settings):
    settings.PAI_OIDC_REDIRECT_URIS = ["https://webportal.example/index.html"]
    assert api_login(client, "https://webportal.example/index.html").status_code == 302
    assert api_login(client, "https://webportal.example/other.html").status_code == 400


def test_the_api_logout_goes_to_the_providers_end_session_endpoint(client, oidc_provider):
    response = client.get("/api/v2/authn/oidc/logout")
    assert response.status_code == 302
    target = urlsplit(response["Location"])
    assert f"{target.scheme}://{target.netloc}{target.path}" == f"{oidc_provider.issuer}/session/end"
    assert parse_qs(target.query)["post_logout_redirect_uri"] == ["http://testserver/login/"]


def test_the_api_logout_goes_to_the_sign_in_page_without_a_provider(settings):
    settings.PAI_OIDC_ISSUER = ""
    response = Client().get("/api/v1/authn/oidc/logout")
    assert (response.status_code, response["Location"]) == (302, "/login/")


def test_a_logout_navigation_from_another_site_ends_no_session(admin_client, oidc_provider):
    response = admin_client.get(
        "/api/v2/authn/oidc/logout", HTTP_SEC_FETCH_SITE="cross-site", HTTP_REFERER="https://evil.example/page"
    )
    assert (response.status_code, response["Location"]) == (302, "/")
    assert "_auth_user_id" in admin_client.session


def test_a_logout_navigation_from_a_listed_web_portal_ends_the_session(admin_client, oidc_provider, settings):
    settings.PAI_OIDC_REDIRECT_URIS = ["https://webportal.example/"]
    response = admin_client.get(
        "/api/v2/authn/oidc/logout", HTTP_SEC_FETCH_SITE="cross-site", HTTP_REFERER="https://webportal.example/x"
    )
    assert response.status_code == 302
    assert "_auth_user_id" not in admin_client.session
