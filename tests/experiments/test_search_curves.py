"""The search duty's curve cache (jobs/sweep_curves.py): a finished run's points read once, a
running run's new points only, each run's curve as the sampler stored it."""

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from clusters.models import VirtualCluster
from jobs.models import JobState, MetricPoint, MetricSeries, Sweep
from jobs.sweep_curves import CurveCache
from jobs.sweep_search import advance
from jobs.sweeps import runs, submit_sweep
from tests.conftest import rows_for_module
from tests.experiments.test_adaptive_search import search_text
from tests.factories import create_user

pytestmark = pytest.mark.django_db

SEARCH64 = "{algorithm: random, metric: loss, trials: 64, maxConcurrent: 64, parameters: {x: {min: 0, max: 4}}}"


def report(job, values: dict[int, float], at: int) -> None:
    """Points of the job's task as the sampler writes them: each added to the series' count."""
    task = job.tasks.get()
    for step, value in values.items():
        MetricPoint.objects.update_or_create(
            task=task, name="loss", step=step, defaults={"job": job, "value": value, "at": at}
        )
    series, _ = MetricSeries.objects.get_or_create(
        job=job, name="loss", defaults={"last_value": 0, "min_value": 0, "max_value": 0}
    )
    MetricSeries.objects.filter(pk=series.pk).update(points=series.points + len(values))


@pytest.fixture(scope="module")
def search64(django_db_setup, django_db_blocker):
    """alice's search of 64 runs that reported 20 steps each, all finished: made once for the
    module (`rows_for_module`; a 64-run submit and its points per test were most of the file's
    CPU), what a test reports or advances undone by its own transaction."""

    def make() -> Sweep:
        VirtualCluster.objects.get_or_create(name="default", defaults={"share_percent": 100})
        sweep = submit_sweep(create_user("alice"), search_text(SEARCH64))
        jobs = list(runs(sweep).prefetch_related("tasks"))
        MetricPoint.objects.bulk_create(
            MetricPoint(job=job, task=job.tasks.all()[0], name="loss", step=step, value=1.0 / step, at=step)
            for job in jobs
            for step in range(1, 21)
        )  # (each step read a second after the last)
        MetricSeries.objects.bulk_create(
            MetricSeries(job=job, name="loss", points=20, last_step=20, last_value=0.05, min_value=0.05, max_value=1)
            for job in jobs
        )
        runs(sweep).update(state=JobState.SUCCEEDED)
        return sweep

    yield from rows_for_module(django_db_blocker, make)


@pytest.fixture
def user(search64):
    return search64.owner


def test_it_reads_a_finished_runs_points_once(search64):
    cache = CurveCache()
    ids = list(runs(search64).values_list("pk", flat=True))
    first = cache.curves(ids, "loss")

    again = cache.curves(ids, "loss")

    assert cache.points_read == 64 * 20
    assert again == first and again[ids[0]][20] == 0.05


def test_it_reads_only_a_running_runs_new_points(search64):
    cache = CurveCache()
    job = runs(search64)[0]
    cache.curves([job.pk], "loss")
    read = cache.points_read

    report(job, {21: 0.01, 3: 0.5}, at=200)  # (a new step, and a step reported again)
    curve = cache.curves([job.pk], "loss")[job.pk]

    assert cache.points_read - read == 3  # (and the last second's again: step 20)
    assert (curve[21], curve[3], curve[2], len(curve)) == (0.01, 0.5, 0.5, 21)


def test_the_duty_reads_no_point_of_a_finished_search_again(search64):
    cache = CurveCache()
    advance(Sweep.objects.get(pk=search64.pk), cache)

    with CaptureQueriesContext(connection) as second:
        advance(Sweep.objects.get(pk=search64.pk), cache)

    assert not [query for query in second.captured_queries if "metricpoint" in query["sql"].lower()]


def test_it_keeps_when_each_step_was_read(search64):
    cache = CurveCache()
    job = runs(search64)[0]
    cache.curves([job.pk], "loss")

    report(job, {21: 0.01}, at=200)
    cache.curves([job.pk], "loss")

    assert cache.read_times([job.pk], "loss")[job.pk] == {**{step: step for step in range(1, 21)}, 21: 200}
