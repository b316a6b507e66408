"""/docs/ serves the documentation site `make docs` builds (web/help), to anyone, from the Help link."""

from pathlib import Path

import pytest
from django.conf import settings as django_settings

from tests.conftest import require

BUILT_SITE = Path(django_settings.BASE_DIR) / "site"


@pytest.fixture
def site(settings, tmp_path):
    """A built site of two pages, as MkDocs lays them out (a folder per page)."""
    root = tmp_path / "site"
    (root / "user" / "first-job").mkdir(parents=True)
    (root / "index.html").write_text("<title>PAI Portal</title>the home page")
    (root / "user" / "first-job" / "index.html").write_text("the first job page")
    (tmp_path / "secret_key").write_text("a secret")  # beside the site: never served
    settings.DOCS_SITE_DIR = root
    return root


def test_it_serves_the_sites_index_at_docs_to_anyone(client, site):
    answer = client.get("/docs/")
    assert answer.status_code == 200
    assert b"the home page" in b"".join(answer.streaming_content)


def test_it_serves_a_page_from_its_folders_index(client, site):
    answer = client.get("/docs/user/first-job/")
    assert answer.status_code == 200
    assert b"the first job page" in b"".join(answer.streaming_content)


def test_it_sends_a_folder_without_its_slash_to_the_folder(client, site):
    answer = client.get("/docs/user/first-job")
    assert answer.status_code == 302
    assert answer["Location"] == "/docs/user/first-job/"


def test_it_answers_404_for_a_path_out_of_the_site(client, site):
    assert client.get("/docs/%2e%2e/secret_key").status_code == 404
    assert client.get("/docs/..%2fsecret_key").status_code == 404
    assert client.get("/docs/nothing-here/").status_code == 404


def test_it_says_to_run_make_docs_when_the_site_is_not_built(client, settings, tmp_path):
    settings.DOCS_SITE_DIR = tmp_path / "site"
    answer = client.get("/docs/")
    assert answer.status_code == 404
    assert b"make docs" in answer.content


def test_it_puts_a_help_link_in_every_pages_top_bar(client, user):
    client.force_login(user)
    assert b'class="help-link" href="/docs/user/pages/"' in client.get("/").content
    client.logout()
    assert b'class="help-link" href="/docs/user/first-job/"' in client.get("/login/").content


def test_it_serves_the_built_site_with_its_search(client):
    """The real site, as `make docs` built it (CI builds it before the tests)."""
    require((BUILT_SITE / "index.html").is_file(), "the documentation site (make docs)")
    home = b"".join(client.get("/docs/").streaming_content)
    assert b"PAI Portal" in home
    assert b"search" in home
    assert client.get("/docs/search/search_index.json").status_code == 200
    assert client.get("/docs/user/first-job/").status_code == 200
