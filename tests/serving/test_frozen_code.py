"""The served app puts everything that lives as long as the process out of the garbage collector's
sight (gc.freeze): each full collection walked what was left in view, and the views' modules,
loaded lazily on the first request, were 46,000 objects of it, ~35 ms a collection (issue 49)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
# (A fresh interpreter's objects: no database difference; CI's PostgreSQL run leaves it out.)
pytestmark = pytest.mark.db_agnostic

# In a fresh interpreter as a server worker starts: the app imported, then the first requests'
# imports (the URLconf's views) counted where the collector still walks them.
PROBE = """
import gc, json
import django
django.setup()
import pai_portal.asgi
before = len(gc.get_objects())
from django.urls import get_resolver
get_resolver().url_patterns
print(json.dumps({"views_left_to_the_collector": len(gc.get_objects()) - before}))
"""


@pytest.mark.slow
def test_it_loads_every_view_before_freezing_the_collector(tmp_path):
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "pai_portal.settings", "PAI_VAR_DIR": str(tmp_path)}
    done = subprocess.run(
        [sys.executable, "-c", PROBE], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120, check=True
    )
    found = json.loads(done.stdout.strip().splitlines()[-1])
    assert found["views_left_to_the_collector"] < 1000, found
