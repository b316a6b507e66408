"""Jobs submitted before config_text was stored masked: replace their secret values by ******
(the values stay in secrets_encrypted, which the scheduler reads)."""

from django.db import migrations


def mask_stored_configs(apps, schema_editor):  # type: ignore[no-untyped-def]
    from jobs.protocol import mask_config_text

    Job = apps.get_model("jobs", "Job")
    for job in Job.objects.exclude(secrets_encrypted="").only("pk", "config_text").iterator():
        masked = mask_config_text(job.config_text)
        if masked != job.config_text:
            Job.objects.filter(pk=job.pk).update(config_text=masked)


class Migration(migrations.Migration):
    dependencies = [("jobs", "0004_task_attempts_and_states")]

    operations = [migrations.RunPython(mask_stored_configs, migrations.RunPython.noop)]
