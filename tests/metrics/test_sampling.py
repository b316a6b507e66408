"""Readers of task resources and the sampler's storage and retention (no Docker here: the
real-container test is tests/docker/test_usage.py)."""

import functools
import io
import json
import subprocess
import time
from collections import Counter
from pathlib import Path

import pytest
from django.core.management import call_command

from clusters.executors.stats import from_docker_stats
from clusters.gpus import GpuReading, parse_nvidia_smi
from jobs.models import JobState, Task, TaskSample
from scheduling.lease import Holder
from scheduling.sampler import Sampler, fold_and_prune, sampler_lease
from tests.factories import create_job
from tests.scheduler.conftest import role, v2_job

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "gpus"


def test_it_reads_gpus_from_a_recorded_nvidia_smi_sample():
    readings = parse_nvidia_smi((FIXTURES / "nvidia-smi.csv").read_text())

    assert readings == {0: GpuReading(0, 3, 412, 16160), 1: GpuReading(1, 97, 14893, 16160)}


def test_it_reads_a_containers_engine_stats_as_docker_stats_shows_them():
    sample = from_docker_stats(json.loads((FIXTURES / "docker-stats-cgroup2.json").read_text()))

    assert sample is not None
    assert sample.cpu_seconds == 12.5
    assert sample.memory_bytes == 300 * 1024 * 1024 and sample.memory_limit_bytes == 600 * 1024 * 1024
    assert (sample.net_rx_bytes, sample.net_tx_bytes) == (4096, 1024)
    assert (sample.disk_read_bytes, sample.disk_write_bytes) == (4096000, 1024000)


def test_it_reads_nothing_from_a_stopped_containers_stats():
    assert from_docker_stats({"cpu_stats": {}, "memory_stats": {}}) is None


@pytest.fixture
def recorded_gpus():
    return lambda: parse_nvidia_smi((FIXTURES / "nvidia-smi.csv").read_text())


def test_it_samples_a_running_process_task_with_the_gpus_it_holds(submit, run_until, recorded_gpus):
    job = run_until(submit(v2_job("busy", role("worker", "sleep 30"))), JobState.RUNNING)
    Task.objects.filter(job=job).update(gpus=[1])

    deadline = time.monotonic() + 10
    while True:  # the first moments of a task can be a sandbox of under 1 MB: sample until it runs
        TaskSample.objects.filter(task__job=job).delete()
        stored = Sampler(gpu_reader=recorded_gpus).sample_once()
        sample = TaskSample.objects.get(task__job=job)
        if sample.memory_mb >= 1 or time.monotonic() > deadline:
            break
        time.sleep(0.05)

    assert stored == 1
    assert sample.memory_mb >= 1 and sample.gpus == [[1, 97, 14893]]


def raw(task, at, memory_mb, cpu_milli=500):
    return TaskSample(task=task, at=at, cpu_milli=cpu_milli, memory_mb=memory_mb)


@pytest.mark.django_db
def test_it_folds_day_old_raw_samples_into_minutes_keeping_the_peak_memory(user, settings):
    settings.PAI_SAMPLE_RAW_HOURS = 24
    task = create_job(user).tasks.get()
    day_ago = int(time.time()) - 25 * 3600
    minute = day_ago - day_ago % 60
    TaskSample.objects.bulk_create(
        [raw(task, minute + 5, 100, 1000), raw(task, minute + 15, 300, 0), raw(task, int(time.time()), 50)]
    )

    folded, _ = fold_and_prune(time.time())

    rows = list(TaskSample.objects.order_by("at").values_list("period", "at", "memory_mb", "cpu_milli"))
    assert folded == 2
    assert rows[0] == (60, minute, 300, 500) and rows[1][0] == 0


@pytest.mark.django_db
def test_it_deletes_samples_older_than_the_retention(user, settings):
    settings.PAI_SAMPLE_KEEP_DAYS = 30
    task = create_job(user).tasks.get()
    TaskSample.objects.bulk_create([raw(task, int(time.time()) - 31 * 86400, 100), raw(task, int(time.time()), 100)])

    fold_and_prune(time.time())

    assert TaskSample.objects.count() == 1


def test_it_samples_from_its_own_command(submit, run_until):
    run_until(submit(v2_job("busy", role("worker", "sleep 30"))), JobState.RUNNING)

    call_command("runsampler", "--once", stdout=io.StringIO())

    assert TaskSample.objects.count() == 1


@pytest.mark.django_db
def test_it_lets_one_sampler_sample_at_a_time():
    first, second = sampler_lease(Holder.here()), sampler_lease(Holder.here())  # two live ones here
    assert first.take()

    assert not second.take()
    first.release()
    assert second.take()


@pytest.mark.django_db
def test_it_takes_the_lease_of_an_ended_sampler_of_this_machine_at_once():
    process = subprocess.Popen(["sleep", "60"])
    assert sampler_lease(Holder.of(process.pid)).take()  # a sampler process of this machine, which then ends
    process.kill()
    process.wait()

    assert sampler_lease().take()


# -- the duties, each on its own timer ------------------------------------------------------------

HOURLY_ROLLUP = "usage of today and yesterday"


def counted(sampler: Sampler, failing: str = "") -> Counter[str]:
    """The sampler's duties, counted instead of run (`failing` raises as well)."""
    runs: Counter[str] = Counter()

    def duty(name: str) -> None:
        runs[name] += 1
        if name == failing:
            raise RuntimeError(f"{name} failed")

    for each in sampler.duties:
        each.function = functools.partial(duty, each.name)
    return runs


def passes(sampler: Sampler, seconds: int, every: int = 10) -> None:
    for now in range(0, seconds + 1, every):
        sampler.run_due(now)


def test_it_runs_each_duty_at_its_period():
    sampler = Sampler()
    runs = counted(sampler)

    passes(sampler, 3600)  # 361 passes, 10 s apart

    assert runs == {
        "sample": 361,
        "training metrics": 361,
        "adaptive search": 361,
        "watch apps": 361,
        "alerts": 361,
        "usage of ended runs": 361,
        "vc samples": 61,
        HOURLY_ROLLUP: 2,
        "fold and prune samples": 2,
        "remove expired files": 2,
        "prune the outbox": 2,
        "weekly reports": 2,
    }


def test_it_does_not_run_the_hourly_rollup_again_when_another_hourly_duty_fails(monkeypatch):
    monkeypatch.setattr("scheduling.sampler.close_old_connections", lambda: None)  # (no database here)
    sampler = Sampler()
    runs = counted(sampler, failing="weekly reports")

    passes(sampler, 600)

    assert runs[HOURLY_ROLLUP] == 1 and runs["fold and prune samples"] == 1


def test_it_logs_a_failing_duty_and_tries_it_again_at_its_own_period(monkeypatch, caplog):
    monkeypatch.setattr("scheduling.sampler.close_old_connections", lambda: None)
    sampler = Sampler()
    runs = counted(sampler, failing="weekly reports")

    passes(sampler, 3600)

    assert runs["weekly reports"] == 2 and runs["sample"] == 361
    assert [r.message for r in caplog.records] == ["sampler duty 'weekly reports' failed; trying again in 3600 s"] * 2


def test_a_restarted_sampler_runs_an_hourly_duty_at_its_first_pass_only():
    restarted = Sampler()  # a new process: no last runs of its own
    runs = counted(restarted)

    passes(restarted, 600)

    assert runs[HOURLY_ROLLUP] == 1 and runs["sample"] == 61
