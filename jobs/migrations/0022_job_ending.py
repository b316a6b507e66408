"""A job's ending as one record: ending_cause (stop, time_limit, preemption, reclaim), ending_by,
ending_reason (and its message) and ending_deadline, from execution_type, preempted_by,
borrowed_from, ending_at_time_limit, stop_reason (and its message) and stop_deadline."""

import django.db.models.deletion
from django.db import migrations, models


def to_ending(apps, schema_editor):
    Job = apps.get_model("jobs", "Job")
    # (A Stop asked wins over the end it interrupts, as the stop phase carries it out.)
    Job.objects.filter(execution_type="STOP").update(ending_cause="stop", ending_by=None)
    ending = Job.objects.filter(ending_cause="")
    ending.filter(ending_by__isnull=False, borrowed_from__isnull=False).update(ending_cause="reclaim")
    ending.filter(ending_by__isnull=False, borrowed_from__isnull=True).update(ending_cause="preemption")
    ending.filter(ending_at_time_limit=True).update(ending_cause="time_limit")


def from_ending(apps, schema_editor):
    Job = apps.get_model("jobs", "Job")
    Job.objects.filter(ending_cause="stop").update(execution_type="STOP")
    Job.objects.filter(ending_cause="time_limit").exclude(state="FAILED").update(ending_at_time_limit=True)


class Migration(migrations.Migration):
    dependencies = [
        ("jobs", "0021_exit_diagnostics_messages"),
    ]

    operations = [
        migrations.RenameField(model_name="job", old_name="stop_deadline", new_name="ending_deadline"),
        migrations.RenameField(model_name="job", old_name="stop_reason", new_name="ending_reason"),
        migrations.RenameField(model_name="job", old_name="stop_reason_message", new_name="ending_reason_message"),
        migrations.RenameField(model_name="job", old_name="preempted_by", new_name="ending_by"),
        migrations.AlterField(
            model_name="job",
            name="ending_by",
            field=models.ForeignKey(
                blank=True,
                null=True,
                on_delete=django.db.models.deletion.SET_NULL,
                related_name="ending",
                to="jobs.job",
            ),
        ),
        migrations.AddField(
            model_name="job",
            name="ending_cause",
            field=models.CharField(
                blank=True,
                choices=[
                    ("stop", "Stop"),
                    ("time_limit", "Time limit"),
                    ("preemption", "Preemption"),
                    ("reclaim", "Reclaim"),
                ],
                default="",
                max_length=16,
            ),
        ),
        migrations.RunPython(to_ending, from_ending),
        migrations.RemoveField(model_name="job", name="ending_at_time_limit"),
        migrations.RemoveField(model_name="job", name="execution_type"),
    ]
