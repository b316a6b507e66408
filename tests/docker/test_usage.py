"""Resource samples of tasks in real containers reach the job page's plot data."""

import json
import time

import pytest
from prometheus_client.parser import text_string_to_metric_families

from jobs.actions import submit_job
from jobs.models import JobState
from scheduling.sampler import Sampler
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
    assert 0.8 <= max(task["cpu"][1:]) <= 1.2
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
