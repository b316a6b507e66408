"""Job tags (OpenPAI's tag API) and Job.gpu_count (the job list sorts by totalGpuNumber), filled in
for the jobs submitted before from their stored spec."""

import django.db.models.deletion
from django.db import migrations, models


def count_gpus(apps, schema_editor):  # type: ignore[no-untyped-def]
    from jobs.protocol.limits import spec_totals

    Job = apps.get_model("jobs", "Job")
    for job in Job.objects.only("pk", "spec").iterator():
        if gpus := spec_totals(job.spec)[2]:
            Job.objects.filter(pk=job.pk).update(gpu_count=gpus)


class Migration(migrations.Migration):

    dependencies = [
        ('jobs', '0007_event_params'),
    ]

    operations = [
        migrations.AddField(
            model_name='job',
            name='gpu_count',
            field=models.PositiveIntegerField(default=0),
        ),
        migrations.RunPython(count_gpus, migrations.RunPython.noop),
        migrations.CreateModel(
            name='JobTag',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('name', models.CharField(max_length=255)),
                ('job', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='tags', to='jobs.job')),
            ],
            options={
                'ordering': ['job', 'id'],
                'indexes': [models.Index(fields=['name'], name='job_tag_name')],
                'constraints': [models.UniqueConstraint(fields=('job', 'name'), name='unique_tag_per_job')],
            },
        ),
    ]
