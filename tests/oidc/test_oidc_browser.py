"""In Debian's Chromium against the portal's live ASGI server and the real OpenID provider: the
sign-in page's button, the provider's own form, back signed in; signing out ends the provider's
session too, so the next sign-in asks for the password again."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth import get_user_model
from playwright.sync_api import expect

from accounts.models import Account
from tests.browser.pages import open_the_menu
from tests.conftest import CHROMIUM, launched_chromium, require
from tests.oidc.conftest import password_of

pytestmark = [pytest.mark.browser, pytest.mark.slow, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def portal_url(asgi_live_server: Any) -> str:
    return str(asgi_live_server.url)


@pytest.fixture
def page(oidc_provider: Any, monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    """A browser page, the provider running (Playwright's sync API runs an event loop here)."""
    require(Path(CHROMIUM).exists(), "Debian chromium (apt-get install chromium)")
    monkeypatch.setenv("DJANGO_ALLOW_ASYNC_UNSAFE", "true")
    with launched_chromium() as browser:
        context = browser.new_context(viewport={"width": 390, "height": 844}, locale="en-US")
        context.set_default_timeout(20_000)
        yield context.new_page()
        context.close()


@pytest.fixture
def sign_in_at_the_provider(page: Any) -> Callable[[str], None]:
    def sign_in(username: str) -> None:
        expect(page.locator("#provider-login")).to_be_visible()
        page.fill("#provider-username", username)
        page.fill("#provider-password", password_of(username))
        page.click("#provider-submit")

    return sign_in


def test_the_sign_in_button_signs_in_at_the_provider_and_lands_signed_in_on_the_portal(
    page, portal_url, oidc_provider, sign_in_at_the_provider
):
    page.goto(f"{portal_url}/submit/")
    button = page.locator("#oidc-sign-in")
    expect(button).to_have_text("Sign in with single sign-on")
    assert button.bounding_box()["height"] >= 44
    button.click()
    page.wait_for_url(f"{oidc_provider.issuer}/**")
    sign_in_at_the_provider("carol")
    page.wait_for_url(f"{portal_url}/submit/")
    expect(page.locator(".whoami")).to_have_text("carol")
    carol = get_user_model().objects.get(username="carol")
    assert carol.email == "carol@example.org"
    assert set(carol.groups.values_list("name", flat=True)) == {"ml_team"}
    assert Account.objects.get(user=carol).source == Account.Source.OIDC


def test_signing_out_ends_the_providers_session_too(page, portal_url, oidc_provider, sign_in_at_the_provider):
    page.goto(f"{portal_url}/login/oidc/")
    sign_in_at_the_provider("carol")
    expect(page.locator(".whoami")).to_have_text("carol")
    page.context.clear_cookies(name="sessionid")  # the portal's session gone, the provider's kept:
    page.goto(f"{portal_url}/login/oidc/")  # straight back in, no password asked
    expect(page.locator(".whoami")).to_have_text("carol")

    open_the_menu(page)  # (this page is a phone's: Sign out is behind the top bar's Menu)
    page.get_by_role("button", name="Sign out").click()
    page.wait_for_url(f"{portal_url}/login/**")
    expect(page.locator(".whoami")).to_have_count(0)
    page.goto(f"{portal_url}/login/oidc/")
    expect(page.locator("#provider-login")).to_be_visible()
