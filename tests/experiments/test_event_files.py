"""TensorBoard event files in a job's outputDir (scheduling/event_files.py, read by the sampler's
training-metrics duty): each scalar a point of the job's first task, read on from where the last
pass stopped; a corrupt file counted as a bad line, never fatal. The files are written with
TensorBoard's own writer."""

from pathlib import Path

import pytest
from django.test import Client
from tensorboard.summary import Writer

from clusters import job_files
from jobs.models import JobState, MetricPoint, MetricSource, Task, TaskState
from jobs.storage import areas
from scheduling.training_metrics import MetricReader
from tests.factories import create_job, v1_json, v1_role
from tests.scheduler.conftest import role, v2_job

OUTPUT = "$PAI_DEFAULT_FS_URI/out"


def write_scalars(folder: Path, tag: str, values: dict[int, float]) -> None:
    writer = Writer(str(folder))
    for step, value in values.items():
        writer.add_scalar(tag, value, step=step)
    writer.flush()
    writer.close()


def points(job) -> list[tuple[str, int, float]]:
    return list(MetricPoint.objects.filter(job=job).order_by("name", "step").values_list("name", "step", "value"))


@pytest.fixture
def running(user, settings, tmp_path):
    """A job whose one task runs, with an outputDir in its owner's area (`output`)."""
    settings.PAI_FS_ROOT = tmp_path / "fs"
    settings.PAI_WORK_ROOT = tmp_path / "work"
    settings.PAI_LOG_DIR = tmp_path / "logs"
    job = create_job(user, "tb", state=JobState.RUNNING)
    job.spec = {**job.spec, "extras": {"v1": {"outputDir": OUTPUT}}}
    job.save(update_fields=["spec"])
    Task.objects.filter(job=job).update(state=TaskState.RUNNING)
    return job


@pytest.fixture
def output(running) -> Path:
    folder = areas.user_area(running.owner.username) / "out"
    folder.mkdir()
    return folder


def test_it_reads_the_scalars_of_an_event_file_in_the_output_dir(running, output):
    write_scalars(output, "loss", {1: 0.5, 2: 0.25})

    MetricReader().read()

    assert points(running) == [("loss", 1, 0.5), ("loss", 2, 0.25)]


def test_it_names_a_subfolders_scalars_after_it(running, output):
    write_scalars(output / "eval", "loss", {1: 0.75})

    MetricReader().read()

    assert points(running) == [("eval/loss", 1, 0.75)]


def test_it_reads_only_the_new_records_of_a_file_each_pass(running, output):
    reader = MetricReader()
    writer = Writer(str(output))
    writer.add_scalar("loss", 0.5, step=1)
    writer.flush()
    reader.read()
    MetricPoint.objects.filter(job=running).update(value=9.0)  # (read again, it would be 0.5)
    writer.add_scalar("loss", 0.25, step=2)
    writer.close()

    reader.read()

    assert points(running) == [("loss", 1, 9.0), ("loss", 2, 0.25)]


def test_a_new_sampler_goes_on_after_the_records_already_read(running, output):
    writer = Writer(str(output))
    writer.add_scalar("loss", 0.5, step=1)
    writer.flush()
    MetricReader().read()
    MetricPoint.objects.filter(job=running).update(value=9.0)
    writer.add_scalar("loss", 0.25, step=2)
    writer.close()

    MetricReader().read()  # (a restarted sampler: only the rows remember)

    assert points(running) == [("loss", 1, 9.0), ("loss", 2, 0.25)]
    assert MetricSource.objects.get(kind="tb").next_step == 3


def test_a_file_closed_past_the_open_files_cap_is_read_on_where_it_stopped(running, output, monkeypatch):
    monkeypatch.setattr("scheduling.event_files.MAX_OPEN", 1)
    reader = MetricReader()
    writers = {name: Writer(str(output / name)) for name in ("a", "b")}
    for writer in writers.values():
        writer.add_scalar("loss", 0.5, step=1)
        writer.flush()
    reader.read()
    MetricPoint.objects.filter(job=running).update(value=9.0)  # (read again, they would be 0.5)
    for writer in writers.values():
        writer.add_scalar("loss", 0.25, step=2)
        writer.close()

    reader.read()

    assert len(reader.event_files.open) == 1
    assert points(running) == [("a/loss", 1, 9.0), ("a/loss", 2, 0.25), ("b/loss", 1, 9.0), ("b/loss", 2, 0.25)]
    assert MetricSource.objects.get(path__startswith="b/").next_step == 3


def test_it_counts_a_corrupt_file_and_reads_on(running, output):
    (output / "events.out.tfevents.0.broken").write_bytes(b"not a record" * 10)
    write_scalars(output, "loss", {1: 0.5})
    reader = MetricReader()

    reader.read()
    reader.read()  # (bytes left that did not grow over a pass: corrupt)
    reader.read()

    assert points(running) == [("loss", 1, 0.5)]
    assert MetricSource.objects.get(kind="tb", path__endswith="broken").bad_lines == 1


def test_it_keeps_an_event_files_points_within_the_jobs_cap(running, output, settings):
    settings.PAI_METRICS_MAX_POINTS = 2
    write_scalars(output, "loss", {1: 0.5, 2: 0.25, 3: 0.125})

    MetricReader().read()

    assert len(points(running)) == 2
    assert MetricSource.objects.get(kind="tb").dropped == 1


def test_it_follows_no_link_out_of_the_output_dir(running, output, tmp_path):
    elsewhere = tmp_path / "elsewhere"
    write_scalars(elsewhere, "secret", {1: 1.0})
    (output / "linked").symlink_to(elsewhere)

    MetricReader().read()

    assert points(running) == []


def with_logdir(job, logdir) -> None:
    """The job's config as a v2 one with OpenPAI's `tensorboard` runtime plugin naming `logdir`."""
    plugin = {"plugin": "tensorboard", "parameters": {"port": 11449, "logdir": logdir}}
    job.spec = {**job.spec, "extras": {**job.spec["extras"], "com.microsoft.pai.runtimeplugin": [plugin]}}
    job.save(update_fields=["spec"])


def test_it_reads_a_v2_jobs_tensorboard_logdir_in_its_work_dir(running):
    with_logdir(running, {"train": "$PAI_WORK_DIR/tb"})
    write_scalars(job_files.task_work_dir(running.pk, "worker", 0) / "tb", "loss", {1: 0.5})

    MetricReader().read()

    assert points(running) == [("loss", 1, 0.5)]


def test_it_names_each_logdirs_scalars_after_its_run_as_tensorboard_does(running):
    with_logdir(running, {"train": "/pai/work/tb", "eval": "$PAI_DEFAULT_FS_URI/eval"})
    write_scalars(job_files.task_work_dir(running.pk, "worker", 0) / "tb", "loss", {1: 0.5})
    write_scalars(areas.user_area(running.owner.username) / "eval", "acc", {1: 0.75})

    MetricReader().read()

    assert points(running) == [("eval/acc", 1, 0.75), ("train/loss", 1, 0.5)]


def test_it_reads_no_logdir_outside_the_owners_area_and_the_work_dir(running, output, tmp_path):
    """A logdir naming a path of the portal's machine (or a storage's mount) is not read, nor is
    the outputDir once the plugin names the folders."""
    elsewhere = tmp_path / "elsewhere"
    write_scalars(elsewhere, "secret", {1: 1.0})
    write_scalars(output, "loss", {1: 0.5})
    with_logdir(running, {"a": str(elsewhere), "b": "/mnt/tb", "c": "$HOME/tb", "d": "../../elsewhere"})

    MetricReader().read()

    assert points(running) == []


def test_a_real_process_tasks_event_file_shows_in_the_api(user, submit, run_until, tmp_path, settings):
    """The task copies an event file TensorBoard's writer made (the sandbox has no TensorBoard)
    and a corrupt one into its outputDir; the API answers the scalars and counts the bad file."""
    made = tmp_path / "made"
    write_scalars(made, "accuracy", {10: 0.5, 20: 0.75})
    staged = areas.user_area(user.username) / "staged"
    staged.mkdir()
    (staged / "events.out.tfevents.1.good").write_bytes(next(made.iterdir()).read_bytes())
    (staged / "events.out.tfevents.2.bad").write_bytes(b"\x00garbage" * 8)
    reader = MetricReader()
    reader.read()
    command = 'mkdir -p "$PAI_OUTPUT_DIR/train" && cp "$PAI_DEFAULT_FS_URI"/staged/* "$PAI_OUTPUT_DIR/train/"'
    job = run_until(submit(v1_json("tb", roles=[v1_role("worker", command)], outputDir=OUTPUT)), JobState.SUCCEEDED)

    reader.read()
    reader.read()
    client = Client()
    client.force_login(user)
    answer = client.get(f"/api/v2/jobs/{job.full_name}/metrics").json()

    assert [(s["name"], s["steps"], s["values"]) for s in answer["series"]] == [
        ("train/accuracy", [10, 20], [0.5, 0.75])
    ]
    assert answer["badLines"] == 1


def test_a_real_v2_process_tasks_logdir_shows_in_the_api(user, submit, run_until, tmp_path):
    """A v2 job whose tensorboard plugin names `$PAI_WORK_DIR/tb` (TensorBoard itself may be
    missing on the node: the plugin's failure is ignored); the task copies an event file
    TensorBoard's writer made there."""
    made = tmp_path / "made"
    write_scalars(made, "accuracy", {10: 0.5, 20: 0.75})
    staged = areas.user_area(user.username) / "staged"
    staged.mkdir(parents=True)
    (staged / "events.out.tfevents.1.good").write_bytes(next(made.iterdir()).read_bytes())
    reader = MetricReader()
    reader.read()
    plugin = (
        "extras:\n  com.microsoft.pai.runtimeplugin:\n    - plugin: tensorboard\n      failurePolicy: ignore\n"
        "      parameters:\n        logdir: {train: $PAI_WORK_DIR/tb}\n"
    )
    command = "mkdir -p $PAI_WORK_DIR/tb && cp $PAI_DEFAULT_FS_URI/staged/* $PAI_WORK_DIR/tb/"
    job = run_until(submit(v2_job("tb2", role("worker", command), plugin)), JobState.SUCCEEDED)

    reader.read()
    client = Client()
    client.force_login(user)
    answer = client.get(f"/api/v2/jobs/{job.full_name}/metrics").json()

    assert [(s["name"], s["steps"], s["values"]) for s in answer["series"]] == [("accuracy", [10, 20], [0.5, 0.75])]
