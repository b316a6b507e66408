"""Every install starts with the `default` virtual cluster (100% of the cluster)."""

from django.db import migrations


def create_default_vc(apps, schema_editor):
    VirtualCluster = apps.get_model("clusters", "VirtualCluster")
    VirtualCluster.objects.get_or_create(
        name="default", defaults={"share_percent": 100, "description": "The whole cluster."}
    )


class Migration(migrations.Migration):
    dependencies = [("clusters", "0001_initial")]
    operations = [migrations.RunPython(create_default_vc, migrations.RunPython.noop)]
