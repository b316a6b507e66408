"""What every Django start (each `manage.py` command, test worker and subprocess) leaves out: the
modules only one command or feature needs are imported where they are used. Twisted's server
(daphne's, for `manage.py runserver`) and asyncssh (SSH keys, the web terminal) were ~40 % of a
start's imports before."""

import json
import os
import subprocess
import sys
from pathlib import Path

from django.apps import apps
from django.core.management import get_commands

ROOT = Path(__file__).resolve().parents[2]
LEFT_OUT = ("twisted", "daphne.server", "autobahn", "asyncssh", "optuna")
PROBE = f"import django, json, sys; django.setup(); print(json.dumps([m for m in {LEFT_OUT!r} if m in sys.modules]))"


def test_a_django_start_imports_no_module_only_one_command_or_feature_needs(tmp_path):
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "pai_portal.settings", "PAI_VAR_DIR": str(tmp_path)}
    done = subprocess.run(
        [sys.executable, "-c", PROBE], cwd=ROOT, env=env, capture_output=True, text=True, timeout=60, check=True
    )
    assert json.loads(done.stdout.strip().splitlines()[-1]) == []


def test_runserver_is_daphnes_which_serves_websockets_too():
    labels = [config.label for config in apps.get_app_configs()]
    assert get_commands()["runserver"] == "daphne"
    assert labels.index("daphne") < labels.index("staticfiles")  # (else staticfiles' runserver wins)
