"""The documentation site at /docs/ (issue 48), as a reader uses it: from the portal's Help link,
its offline search finds the curl session, a node's adding and Jupyter, and it fits a phone."""

from __future__ import annotations

from pathlib import Path

import pytest
from django.conf import settings
from playwright.sync_api import expect

from tests.browser.pages import page_has_no_sideways_scroll
from tests.conftest import require

pytestmark = pytest.mark.browser


@pytest.fixture(autouse=True)
def built_site():
    require((Path(settings.DOCS_SITE_DIR) / "index.html").is_file(), "the documentation site (make docs)")


def search(page, words: str) -> list[str]:
    page.locator("label.md-search__icon, .md-search__input").first.click()
    # (Its index loads in a worker: what is typed before it is ready finds nothing.)
    expect(page.locator(".md-search-result__meta")).not_to_have_text("Initializing search")
    page.locator("input.md-search__input").press_sequentially(words, delay=20)  # (keys, as a reader types)
    results = page.locator(".md-search-result__item")
    expect(results.first).to_be_visible()
    return results.all_inner_texts()


@pytest.mark.parametrize(
    ("words", "found"),
    [("curl", "curl"), ("addnode", "node"), ("jupyter", "Jupyter")],
)
def test_it_finds_what_a_new_user_looks_for_from_the_help_link(page, login, user, words, found):
    login(user.username)
    page.goto("/")
    page.locator("a.help-link").first.click()
    page.wait_for_url("**/docs/**")
    assert any(found.lower() in result.lower() for result in search(page, words)[:5])


def test_it_fits_a_phone(phone):
    phone.goto("/docs/user/first-job/")
    expect(phone.locator("h1").first).to_be_visible()
    assert page_has_no_sideways_scroll(phone)
