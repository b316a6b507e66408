"""What every Django start (each `manage.py` command, test worker and subprocess) leaves out: the
modules only one command or feature needs are imported where they are used. Twisted's server
(daphne's, for `manage.py runserver`) and asyncssh (SSH keys, the web terminal) were ~40 % of a
start's imports before."""

from django.apps import apps
from django.core.management import get_commands


def test_a_django_start_imports_no_module_only_one_command_or_feature_needs(django_start):
    assert django_start["imported"] == []  # of tests/serving/conftest.py's LEFT_OUT


def test_runserver_is_daphnes_which_serves_websockets_too():
    labels = [config.label for config in apps.get_app_configs()]
    assert get_commands()["runserver"] == "daphne"
    assert labels.index("daphne") < labels.index("staticfiles")  # (else staticfiles' runserver wins)
