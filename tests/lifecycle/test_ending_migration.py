"""jobs 0022: a job's ending, spread over six columns before, carried into its one record."""

from __future__ import annotations

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor
from django.utils import timezone

from clusters.models import VirtualCluster
from jobs.models import Job, JobState
from tests.factories import create_job


# slow (CI's, not `make fast`'s): the schema taken back and forward again renders every migration's
# state, ~2.7 s of CPU; the migration is history, which a change to the models does not touch.
@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_the_migration_carries_each_jobs_ending_into_one_record(user, default_vc):
    executor = MigrationExecutor(connection)
    after = next(key for key in executor.loader.disk_migrations if key[1].endswith("_job_ending"))
    before = [parent.key for parent in executor.loader.graph.node_map[after].parents if parent.key[0] == "jobs"]
    lender = VirtualCluster.objects.create(name="lender")
    # (Made by today's models, before the schema goes back.)
    urgent = create_job(user, "urgent")
    jobs = {
        name: create_job(user, name, state=JobState.RUNNING)
        for name in ("idle", "preempted", "reclaimed", "overdue", "stopped-while-preempted", "running")
    }
    executor.migrate(before)
    now = timezone.now()
    try:
        old = MigrationExecutor(connection).loader.project_state(before).apps.get_model("jobs", "Job")
        old.objects.filter(pk=jobs["idle"].pk).update(execution_type="STOP", stop_reason="jupyter was idle")
        old.objects.filter(pk=jobs["preempted"].pk).update(preempted_by_id=urgent.pk, stop_deadline=now)
        old.objects.filter(pk=jobs["reclaimed"].pk).update(
            preempted_by_id=urgent.pk, stop_deadline=now, borrowed_from_id=lender.pk
        )
        old.objects.filter(pk=jobs["overdue"].pk).update(ending_at_time_limit=True, stop_deadline=now)
        old.objects.filter(pk=jobs["stopped-while-preempted"].pk).update(
            execution_type="STOP", preempted_by_id=urgent.pk, stop_deadline=now
        )
        MigrationExecutor(connection).migrate([after])
    finally:
        MigrationExecutor(connection).migrate(MigrationExecutor(connection).loader.graph.leaf_nodes())

    rows = Job.objects.filter(pk__in=[job.pk for job in jobs.values()]).values_list(
        "name", "ending_cause", "ending_by_id", "ending_reason", "ending_deadline"
    )
    assert {row[0]: row[1:] for row in rows} == {
        "idle": ("stop", None, "jupyter was idle", None),
        "preempted": ("preemption", urgent.pk, "", now),
        "reclaimed": ("reclaim", urgent.pk, "", now),
        "overdue": ("time_limit", None, "", now),
        "stopped-while-preempted": ("stop", None, "", now),
        "running": ("", None, "", None),
    }
