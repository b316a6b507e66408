"""daphne as an installed app, for its `manage.py runserver` alone (which serves websockets too), without
daphne's own AppConfig module: that imports Twisted's server and reactor (~a third of a Django start's
imports) on every start, every `manage.py` command, test worker and subprocess, for the one command
that serves through it. The command imports the server itself, first, when it runs; `manage.py
serve` (granian) never does. Listed before django.contrib.staticfiles, whose runserver it replaces
(daphne's own check of that order needs daphne's AppConfig: tests/serving/test_django_start.py checks it)."""

from django.apps import AppConfig


class DaphneRunserverConfig(AppConfig):
    name = "daphne"  # its management commands (runserver) are found in the daphne package
    label = "daphne"
    verbose_name = "Daphne"
