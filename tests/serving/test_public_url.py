"""PAI_PUBLIC_URL defaults to where the portal is served (issue 50: with the portal on :34000, an
app's sign-in redirect went to :8000, and so would links in mails and webhooks)."""

import os
import runpy
import subprocess
import sys
from pathlib import Path
from unittest import mock

import pytest

ROOT = Path(__file__).resolve().parents[2]
PROBE = "import django; django.setup(); from django.conf import settings; print(settings.PAI_PUBLIC_URL)"
SERVED_AT = ("PAI_PUBLIC_URL", "PAI_BIND", "PAI_PORT")


def served_env(tmp_path: Path, **variables: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in SERVED_AT}
    env.update(DJANGO_SETTINGS_MODULE="pai_portal.settings", PAI_VAR_DIR=str(tmp_path), **variables)
    return env


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


def test_a_started_portal_serves_its_public_url_where_it_listens(tmp_path):
    """The same, through a real start of Django (settings as `manage.py` loads them), once."""
    done = subprocess.run(
        [sys.executable, "-c", PROBE],
        cwd=ROOT,
        env=served_env(tmp_path, PAI_BIND="0.0.0.0", PAI_PORT="34000"),
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    assert done.stdout.strip().splitlines()[-1] == "http://127.0.0.1:34000"
