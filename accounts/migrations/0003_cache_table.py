"""The database cache's table (settings.CACHES: the throttle counters when REDIS_URL is unset), made
by every `migrate` so that no setup path (make setup, tests, benches, CI) can miss it. Idempotent:
`manage.py createcachetable` makes it again after a switch from Redis."""

from django.core.management import call_command
from django.db import migrations


def create_cache_table(apps, schema_editor):
    call_command("createcachetable", database=schema_editor.connection.alias, verbosity=0)


class Migration(migrations.Migration):
    dependencies = [("accounts", "0002_notification_preference")]

    operations = [migrations.RunPython(create_cache_table, migrations.RunPython.noop)]
