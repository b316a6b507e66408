"""The API's docs pages load nothing from off the portal: no fonts, scripts or styles from a CDN."""

from urllib.parse import urlsplit

import pytest

# (browser: it drives Chromium, which the marker keeps out of `make fast` and CI's PostgreSQL run, as
# every other Chromium test; it lacked the marker and cost the fast tier ~8 s of wall.)
pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.mark.parametrize("address", ["/api/docs/", "/api/redoc/"])
def test_it_loads_the_api_docs_from_the_portal_alone(page, login, user, live_server, address):
    login(user.username)
    requested: list[str] = []
    page.on("request", lambda request: requested.append(request.url))
    page.goto(address)
    page.wait_for_load_state("networkidle")
    portal = urlsplit(live_server.url).netloc
    off_site = [url for url in requested if urlsplit(url).scheme.startswith("http") and urlsplit(url).netloc != portal]
    assert off_site == []
    assert page.locator("#swagger-ui").count() == 1
