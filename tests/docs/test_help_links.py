"""Each page's Help link opens the documentation's section about that page (web/help/sections.py),
and every section it names is a page and heading of docs/ and of the built site: no dead link."""

import re
from pathlib import Path

import pytest
from django.conf import settings as django_settings
from django.urls import URLPattern, URLResolver, get_resolver
from markdown.extensions.toc import slugify  # type: ignore[import-untyped]

from tests.conftest import require
from web.help.sections import SECTIONS

DOCS = Path(django_settings.BASE_DIR) / "docs"
BUILT_SITE = Path(django_settings.BASE_DIR) / "site"


def url_names(patterns=None, namespace: str = "") -> set[str]:
    names = set()
    for pattern in get_resolver().url_patterns if patterns is None else patterns:
        if isinstance(pattern, URLResolver):
            inner = f"{namespace}{pattern.namespace}:" if pattern.namespace else namespace
            names |= url_names(pattern.url_patterns, inner)
        elif isinstance(pattern, URLPattern) and pattern.name:
            names.add(f"{namespace}{pattern.name}")
    return names


def headings_of(page: str) -> set[str]:
    """The anchors MkDocs gives the page's headings (its toc extension's slugify)."""
    source = DOCS / f"{page.rstrip('/')}.md"
    text = source.read_text() if source.is_file() else (DOCS / page / "index.md").read_text()
    text = re.sub(r"^```.*?^```", "", text, flags=re.M | re.S)  # a `# comment` in a block is no heading
    return {slugify(title.replace("`", ""), "-") for title in re.findall(r"^#+ (.+)$", text, re.M)}


@pytest.mark.parametrize("view_name", sorted(SECTIONS))
def test_it_maps_only_the_portals_own_pages(view_name):
    assert view_name in url_names()


@pytest.mark.parametrize(("view_name", "section"), sorted(SECTIONS.items()))
def test_it_sends_each_help_link_to_a_page_and_heading_of_the_docs(view_name, section):
    page, _, anchor = section.partition("#")
    assert (DOCS / f"{page.rstrip('/')}.md").is_file() or (DOCS / page / "index.md").is_file(), section
    assert not anchor or anchor in headings_of(page), f"{view_name}: no heading #{anchor} in {page}"


def test_it_finds_each_help_links_section_in_the_built_site():
    """The site as `make docs` built it (CI builds it before the tests)."""
    require((BUILT_SITE / "index.html").is_file(), "the documentation site (make docs)")
    for section in SECTIONS.values():
        page, _, anchor = section.partition("#")
        html = (BUILT_SITE / page / "index.html").read_text()
        assert not anchor or f'id="{anchor}"' in html, section


def help_link(content: bytes) -> str:
    match = re.search(rb'class="help-link" href="([^"]*)"', content)
    assert match, "no Help link in the top bar"
    return match.group(1).decode()


def test_it_opens_the_storage_section_from_the_storage_page(client, user):
    client.force_login(user)
    assert help_link(client.get("/storage/").content) == "/docs/user/storage/"


def test_it_opens_the_first_jobs_browser_steps_from_the_submit_page(client, user):
    client.force_login(user)
    assert help_link(client.get("/submit/").content) == "/docs/user/first-job/#from-the-browser-step-by-step"


def test_it_opens_the_sites_home_from_a_page_it_does_not_map(client, user):
    client.force_login(user)
    assert help_link(client.get("/no-such-page/").content) == "/docs/"


def test_it_opens_the_chinese_page_where_there_is_one(client, user):
    client.force_login(user)
    client.cookies[django_settings.LANGUAGE_COOKIE_NAME] = "zh-hans"
    assert help_link(client.get("/submit/").content) == "/docs/zh/user/first-job/"
    assert help_link(client.get("/storage/").content) == "/docs/user/storage/"  # no Chinese page: the English one
    assert help_link(client.get("/no-such-page/").content) == "/docs/zh/"
