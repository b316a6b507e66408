"""The sampler's training-metrics duty (scheduling/training_metrics.py): what a task prints or
appends is read from where the last read stopped into points, series and counts."""

import os
from pathlib import Path

import pytest

from clusters import job_files
from clusters.executors.logcap import STDOUT, stream_log_path
from jobs.models import JobState, MetricPoint, MetricSeries, MetricSource, Task, TaskState
from scheduling import training_metrics
from scheduling.training_metrics import MetricReader
from tests.factories import create_job
from tests.scheduler.conftest import role, v2_job


@pytest.fixture
def running(user, settings, tmp_path):
    """A job whose one task runs, its logs and work dir below tmp_path."""
    settings.PAI_LOG_DIR = tmp_path / "logs"
    settings.PAI_WORK_ROOT = tmp_path / "work"
    job = create_job(user, "train", state=JobState.RUNNING)
    log_path = job_files.task_log(job.pk, 1, "worker", 0, 1)
    log_path.parent.mkdir(parents=True)
    Task.objects.filter(job=job).update(state=TaskState.RUNNING, log_path=str(log_path))
    return job


def stdout_of(job) -> Path:
    return stream_log_path(Task.objects.get(job=job).log_path, STDOUT)


def metrics_file_of(job) -> Path:
    path = job_files.task_work_dir(job.pk, "worker", 0) / "pai-metrics.jsonl"
    path.parent.mkdir(parents=True, exist_ok=True)
    return path


def append(path: Path, text: str) -> None:
    with open(path, "a") as file:
        file.write(text)


def points(job) -> list[tuple[str, int, float]]:
    return list(MetricPoint.objects.filter(job=job).order_by("name", "step").values_list("name", "step", "value"))


def test_it_reads_only_the_new_whole_lines_of_a_tasks_log(running):
    reader = MetricReader()
    append(stdout_of(running), 'hello\nPAI_METRIC {"step": 1, "loss": 0.9}\nPAI_METRIC {"step": 2, "lo')
    reader.read()
    append(stdout_of(running), 'ss": 0.7}\n')
    reader.read()

    assert points(running) == [("loss", 1, 0.9), ("loss", 2, 0.7)]


def test_it_reads_the_metrics_file_in_the_tasks_work_dir(running):
    append(metrics_file_of(running), '{"step": 5, "acc": 0.5}\n{"acc": 0.6}\n')

    MetricReader().read()

    assert points(running) == [("acc", 5, 0.5), ("acc", 6, 0.6)]


def test_it_sums_up_each_metric_as_a_series(running):
    append(
        stdout_of(running), "".join(f'PAI_METRIC {{"step": {s}, "loss": {v}}}\n' for s, v in [(1, 3), (2, 1), (3, 2)])
    )

    MetricReader().read()

    series = MetricSeries.objects.get(job=running, name="loss")
    assert (series.points, series.last_step, series.last_value, series.min_value, series.max_value) == (3, 3, 2, 1, 3)


def test_it_counts_bad_lines_and_reads_on(running):
    append(stdout_of(running), 'PAI_METRIC {oops\nPAI_METRIC {"step": 1, "loss": 1}\n')

    MetricReader().read()

    assert MetricSource.objects.get(task__job=running, kind="log").bad_lines == 1
    assert points(running) == [("loss", 1, 1.0)]


def test_it_drops_and_counts_points_past_the_jobs_cap(running, settings):
    settings.PAI_METRICS_MAX_POINTS = 3
    append(stdout_of(running), 'PAI_METRIC {"step": 1, "a": 1, "b": 2}\nPAI_METRIC {"step": 2, "a": 1, "b": 2}\n')

    MetricReader().read()

    assert MetricPoint.objects.filter(job=running).count() == 3
    assert MetricSource.objects.get(task__job=running, kind="log").dropped == 1


@pytest.fixture
def three_running(user, settings, tmp_path):
    """A job whose three tasks run, their logs below tmp_path."""
    settings.PAI_LOG_DIR = tmp_path / "logs"
    settings.PAI_WORK_ROOT = tmp_path / "work"
    job = create_job(user, "three", roles={"worker": 3}, state=JobState.RUNNING)
    for task in Task.objects.filter(job=job):
        log_path = job_files.task_log(job.pk, 1, "worker", task.index, 1)
        log_path.parent.mkdir(parents=True, exist_ok=True)
        Task.objects.filter(pk=task.pk).update(state=TaskState.RUNNING, log_path=str(log_path))
    return job


def test_a_pass_that_fails_midway_keeps_what_it_committed_and_reads_the_rest_again(three_running, monkeypatch):
    """About TRANSACTION_POINTS points a transaction, each task's with its offsets: a pass that
    dies after its first transaction loses nothing and counts nothing twice."""
    monkeypatch.setattr(training_metrics, "TRANSACTION_POINTS", 2)  # (a task's 2 points a transaction)
    for task in Task.objects.filter(job=three_running):
        lines = f'PAI_METRIC {{"step": 1, "loss": {task.index}}}\nPAI_METRIC {{"step": 2, "loss": {task.index}}}\n'
        append(stream_log_path(task.log_path, STDOUT), lines)
    save_sources = training_metrics._save_sources
    saved = []

    def dies_in_the_second_transaction(sources):
        saved.append(sources)
        if len(saved) == 2:
            raise RuntimeError("the sampler dies")
        save_sources(sources)

    monkeypatch.setattr(training_metrics, "_save_sources", dies_in_the_second_transaction)
    with pytest.raises(RuntimeError):
        MetricReader().read()
    assert MetricPoint.objects.filter(job=three_running).count() == 2
    monkeypatch.setattr(training_metrics, "_save_sources", save_sources)

    MetricReader().read()

    assert MetricPoint.objects.filter(job=three_running).count() == 6
    assert MetricSeries.objects.get(job=three_running, name="loss").points == 6


def test_it_refuses_a_metrics_file_that_is_a_link(running, tmp_path):
    secret = tmp_path / "secret.json"
    secret.write_text('{"step": 1, "password": 1234}\n')
    os.symlink(secret, metrics_file_of(running))

    MetricReader().read()

    assert points(running) == []


def test_it_reads_a_cut_log_again_keeping_only_new_steps(running):
    reader = MetricReader()
    append(stdout_of(running), "x" * 100 + '\nPAI_METRIC {"step": 1, "loss": 1}\n')
    reader.read()
    stdout_of(running).write_text('PAI_METRIC {"step": 1, "loss": 5}\nPAI_METRIC {"step": 2, "loss": 2}\n')
    reader.read()

    assert points(running) == [("loss", 1, 1.0), ("loss", 2, 2.0)]


def test_it_reads_the_metrics_of_a_real_process_task_to_its_last_line(submit, run_until):
    reader = MetricReader()
    reader.read()  # (a sampler that was running before the job)
    # (in YAML's double quotes: \" is a quote)
    command = (
        r"for s in 1 2 3; do echo 'PAI_METRIC {\"step\": '$s', \"loss\": 0.'$s'}'; done; "
        r"echo '{\"step\": 3, \"acc\": 0.8}' >> $PAI_METRICS_FILE"
    )
    job = run_until(submit(v2_job("printer", role("worker", command))), JobState.SUCCEEDED)

    reader.read()

    assert points(job) == [("acc", 3, 0.8), ("loss", 1, 0.1), ("loss", 2, 0.2), ("loss", 3, 0.3)]
