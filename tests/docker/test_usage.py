"""Resource samples of tasks in real containers reach the job page's plot data, and usage counts
every run of short tasks in real containers."""

import json
import time

import pytest
from prometheus_client.parser import text_string_to_metric_families

from bench.usage_runs import EVENT_LAG_S, ContainerRuns
from jobs.actions import submit_job
from jobs.models import Job, JobState, TaskAttempt
from scheduling.models import UsageDay
from scheduling.sampler import Sampler
from scheduling.usage_rollup import roll_up_recent
from tests.factories import password_for, v2_yaml

MB = 1024 * 1024

pytestmark = [pytest.mark.docker, pytest.mark.django_db, pytest.mark.slow]

# Holds 300 MB (written, so the pages are resident) and keeps one CPU busy, forever; as a JSON
# string, which YAML reads unchanged.
HOG = json.dumps("python3 -c \"b = b'x' * (300 << 20); any(iter(int, 1))\"")


def test_it_shows_a_tasks_memory_and_cpu_rising_in_the_plot_data(user, docker_node, run_until, client):
    job = submit_job(user, v2_yaml("hog", HOG, memory_mb=600))
    run_until(job, JobState.RUNNING)
    sampler = Sampler()
    for _ in range(6):
        sampler.sample_once()
        time.sleep(1)
    client.login(username=user.username, password=password_for(user.username))

    usage = client.get(f"/jobs/{job.full_name}/usage.json").json()

    task = usage["tasks"][0]
    assert task["name"] == "worker-0" and task["limit_mb"] == 600
    assert 280 <= max(task["memory_mb"]) <= 340
    # (one busy CPU, at most its limit of 1; on a box busy with other work it gets less of one)
    assert 0.25 <= max(task["cpu"][1:]) <= 1.2
    assert usage["total"]["memory_mb"] == task["memory_mb"]


def test_it_reports_a_running_containers_gauges_in_prometheus_text(user, docker_node, run_until, client, settings):
    settings.PAI_METRICS_TOKEN = "scrape-secret"
    job = submit_job(user, v2_yaml("hog", HOG, memory_mb=600))
    run_until(job, JobState.RUNNING)
    sampler = Sampler()
    for _ in range(3):
        sampler.sample_once()
        time.sleep(1)

    text = client.get("/metrics", headers={"Authorization": "Bearer scrape-secret"}).content.decode()

    samples = {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
    }
    task = (("job", "hog"), ("task", "worker-0"), ("user", user.username), ("vc", "default"))
    assert 280 * MB <= samples[("pai_task_memory_bytes", task)] <= 340 * MB
    assert samples[("pai_task_memory_limit_bytes", task)] == 600 * MB
    assert samples[("pai_task_cpu_cores", task)] > 0.5
    assert samples[("pai_jobs", (("state", "RUNNING"), ("vc", "default")))] == 1
    assert samples[("pai_node_up", (("node", "docker-local"),))] == 1


# -- usage counts every GPU-hour a job held (docs/admin/monitoring.md, "Usage") ------------------------------------


def test_it_counts_every_run_of_short_tasks_that_ended_before_their_start_was_recorded(
    user, docker_node, scheduler, settings, namespace
):
    # One start at a time: the first containers have ended before the pass's last start returns
    # (as when a busy engine starts many jobs at once), so their end is seen before their start.
    settings.PAI_MAX_PARALLEL_STARTS = 1
    with ContainerRuns(namespace) as followed:
        jobs = [submit_job(user, v2_yaml(f"short-{n}", "sleep 0.3", memory_mb=1000)) for n in range(6)]
        deadline = time.monotonic() + 120
        while Job.objects.filter(pk__in=[job.pk for job in jobs]).exclude(state=JobState.SUCCEEDED).exists():
            assert time.monotonic() < deadline, "the short jobs did not all succeed"
            scheduler.run_once()
            time.sleep(0.1)
        attempts = list(TaskAttempt.objects.filter(job__in=jobs))
        engine = followed.of(attempt.executor_id for attempt in attempts)

    roll_up_recent()

    assert len(engine) == len(attempts) == 6, (engine, [a.executor_id for a in attempts])
    runs = [(a.started_at, a.finished_at, engine[a.executor_id]) for a in attempts if a.started_at and a.finished_at]
    assert len(runs) == 6
    # Each run is the engine's own: from its start to its end, a little before its `die` event.
    assert all(
        run.start - EVENT_LAG_S <= began.timestamp() <= ended.timestamp() <= run.die for began, ended, run in runs
    ), runs
    # A row per job and UTC day: a run across midnight is two rows of one job.
    held = UsageDay.objects.filter(job__in=jobs).values_list("job", "memory_mb_seconds")
    assert {job for job, _ in held} == {job.pk for job in jobs}
    ran = sum((ended - began).total_seconds() for began, ended, _ in runs)
    assert sum(mb_seconds for _, mb_seconds in held) == pytest.approx(1000 * ran, rel=0.01)
