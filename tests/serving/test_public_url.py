"""PAI_PUBLIC_URL defaults to where the portal is served (issue 50: with the portal on :34000, an
app's sign-in redirect went to :8000, and so would links in mails and webhooks)."""

import os
import runpy
from pathlib import Path
from unittest import mock

import pytest

from tests.serving.conftest import ROOT, served_env


def public_url(tmp_path: Path, **variables: str) -> str:
    """What the settings file makes of these variables, read in this process (each run in a
    subprocess cost a Django start: most of the fast tier's slowest file)."""
    with mock.patch.dict(os.environ, served_env(tmp_path, **variables), clear=True):
        return runpy.run_path(str(ROOT / "pai_portal" / "settings.py"))["PAI_PUBLIC_URL"]


@pytest.mark.parametrize(
    ("variables", "url"),
    [
        ({"PAI_PORT": "34000"}, "http://127.0.0.1:34000"),
        ({"PAI_BIND": "0.0.0.0", "PAI_PORT": "34000"}, "http://127.0.0.1:34000"),
        ({"PAI_BIND": "10.0.0.7"}, "http://10.0.0.7:8000"),
        ({"PAI_PORT": "34000", "PAI_PUBLIC_URL": "https://portal.example.org"}, "https://portal.example.org"),
    ],
)
def test_it_defaults_the_public_url_to_where_the_portal_is_served(tmp_path, variables, url):
    assert public_url(tmp_path, **variables) == url


def test_a_started_portal_serves_its_public_url_where_it_listens(django_start):
    """The same, through a real start of Django (settings as `manage.py` loads them), once: served
    on 0.0.0.0:34000."""
    assert django_start["public_url"] == "http://127.0.0.1:34000"
