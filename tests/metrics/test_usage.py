"""Usage accounting, two users over two VCs: the daily rollups adding up to real tasks' run time
times their GPUs; the samples' use, the page, the API and the CSV agreeing on runs made in the
database as real ones leave them (a real run each took a second of wall time)."""

from __future__ import annotations

import csv
import io
import threading
from collections.abc import Callable
from datetime import UTC, date, datetime, timedelta

import pytest
from django.test import Client
from django.utils import timezone

from clusters.models import Gpu, GpuType, Node, VirtualCluster
from jobs.actions import submit_job
from jobs.models import Job, JobState, TaskAttempt, TaskSample, TaskState
from jobs.usage import gpu_hours_held
from scheduling.models import UsageDay, UsageMonth
from scheduling.sampler import Sampler
from scheduling.usage_report import usage_report
from scheduling.usage_rollup import (
    last_ended_run,
    roll_up,
    roll_up_ended,
    roll_up_month,
    roll_up_recent,
    rounding_draw,
    whole,
)
from tests.factories import create_job
from tests.scheduler.conftest import role, v2_job

pytestmark = pytest.mark.django_db


@pytest.fixture
def two_vcs(default_vc):
    VirtualCluster.objects.filter(pk=default_vc.pk).update(share_percent=50)
    return default_vc, VirtualCluster.objects.create(name="research", share_percent=50)


def v100s(node: Node) -> None:
    v100 = GpuType.objects.create(name="V100")
    for index in range(4):
        Gpu.objects.create(node=node, index=index, gpu_type=v100)


def held_seconds(job: Job) -> float:
    """What an ended job's runs held: each attempt's run time x its GPUs."""
    runs = TaskAttempt.objects.filter(job=job)
    return sum(
        len(r.gpus) * (r.finished_at - r.started_at).total_seconds() for r in runs if r.started_at and r.finished_at
    )


def ended_run(job: Job, started: datetime, finished: datetime, gpus: list[int] | None = None) -> TaskAttempt:
    return TaskAttempt.objects.create(
        job=job,
        job_attempt=1,
        role="worker",
        index=0,
        attempt=1,
        gpus=gpus or [],
        started_at=started,
        finished_at=finished,
    )


def in_vc(text: str, vc: str) -> str:
    return text.replace("taskRoles:", f"defaults: {{virtualCluster: {vc}}}\ntaskRoles:")


# alice: 2 GPUs in default, 1 GPU in research; bob: 1 GPU in research; each task `sleep 1`
JOBS = (("a1", "default", 2, "user"), ("a2", "research", 1, "user"), ("b1", "research", 1, "other_user"))


def test_the_rollups_add_up_to_the_tasks_run_time_times_their_gpus(
    two_vcs, process_node, user, other_user, submit, run_until
):
    """Real tasks, run by the scheduler side by side (the node's 4 GPUs hold all three)."""
    v100s(process_node)
    owners = {"user": user, "other_user": other_user}
    submitted = [
        submit(in_vc(v2_job(name, role("w", "sleep 1", gpu=gpus)), vc), owner=owners[owner])
        for name, vc, gpus, owner in JOBS
    ]
    ran = [run_until(job, JobState.SUCCEEDED) for job in submitted]
    roll_up(timezone.now().astimezone(UTC).date())

    for job in ran:
        row = UsageDay.objects.get(job=job)
        assert row.gpu_seconds == pytest.approx(held_seconds(job), abs=1)
        assert row.gpu_seconds >= len(job.tasks.get().gpus)  # (each slept 1 s: it ran at least that long)
        assert row.gpu_type == "V100"
    by_user = {u: sum(r.gpu_seconds for r in UsageDay.objects.filter(user__username=u)) for u in ("alice", "bob")}
    assert by_user["alice"] == pytest.approx(held_seconds(ran[0]) + held_seconds(ran[1]), abs=2)


@pytest.fixture
def ran(two_vcs, user, other_user) -> list[Job]:
    """JOBS as the first test's real run leaves them (each task succeeded, its run recorded as its
    attempt: 1 s on the node's GPUs), made in the database, and the day rolled up."""
    node = Node.objects.create(name="local", executor="process", cpus=8, memory_mb=16384)
    v100s(node)
    owners = {"user": user, "other_user": other_user}
    finished = timezone.now()
    started = finished - timedelta(seconds=1)
    jobs = []
    for name, vc, gpus, owner in JOBS:
        job = submit_job(owners[owner], in_vc(v2_job(name, role("w", "sleep 1", gpu=gpus)), vc))
        held = list(range(gpus))
        job.tasks.update(
            state=TaskState.SUCCEEDED, attempt=1, gpus=held, node=node, started_at=started, finished_at=finished
        )
        TaskAttempt.objects.create(
            job=job,
            job_attempt=1,
            role="w",
            index=0,
            attempt=1,
            gpus=held,
            node_name=node.name,
            started_at=started,
            finished_at=finished,
        )
        Job.objects.filter(pk=job.pk).update(state=JobState.SUCCEEDED, launched_at=started, completed_at=finished)
        job.refresh_from_db()
        jobs.append(job)
    roll_up(finished.astimezone(UTC).date())
    return jobs


def test_the_sampled_use_is_utilisation_times_the_samples_period(ran, settings):
    task = ran[0].tasks.get()
    at = int(task.started_at.timestamp())
    TaskSample.objects.create(
        task=task, at=at, period=0, cpu_milli=500, memory_mb=10, gpus=[[0, 50, 100], [1, 100, 100]]
    )
    TaskSample.objects.create(
        task=task, at=at + 60, period=60, cpu_milli=1000, memory_mb=10, gpus=[[0, 0, 0], [1, 10, 0]]
    )
    roll_up(task.started_at.astimezone(UTC).date())
    row = UsageDay.objects.get(job=ran[0])
    assert row.gpu_used_seconds == round(1.5 * settings.PAI_SAMPLE_SECONDS + 0.1 * 60)
    assert row.cpu_used_seconds == round(0.5 * settings.PAI_SAMPLE_SECONDS + 60)


def test_a_run_over_midnight_counts_on_each_day_its_part(ran):
    midnight = datetime(2026, 3, 2, tzinfo=UTC)
    TaskAttempt.objects.filter(job=ran[0]).delete()
    ended_run(ran[0], midnight - timedelta(hours=1), midnight + timedelta(hours=3), gpus=[0, 1])
    roll_up(date(2026, 3, 1))
    roll_up(date(2026, 3, 2))
    days = dict(UsageDay.objects.filter(job=ran[0]).values_list("day", "gpu_seconds"))
    assert days[date(2026, 3, 1)] == 2 * 3600 and days[date(2026, 3, 2)] == 2 * 3 * 3600


def test_a_user_sees_their_own_usage_and_an_admin_everyones(ran, client, user, admin_user):
    client.force_login(user)
    mine = client.get("/api/v2/usage").json()
    assert [j["name"] for j in mine["jobs"]] == sorted(["alice~a1", "alice~a2"], key=lambda n: n != "alice~a1")
    assert [u["name"] for u in mine["users"]] == ["alice"]  # their own rows only
    admin = Client()
    admin.force_login(admin_user)
    everyone = admin.get("/api/v2/usage").json()
    assert {u["name"] for u in everyone["users"]} == {"alice", "bob"}
    assert {v["name"] for v in everyone["virtualClusters"]} == {"default", "research"}
    assert everyone["totals"]["jobs"] == 3


def test_the_csv_matches_the_api(ran, client, admin_user):
    client.force_login(admin_user)
    api = client.get("/api/v2/usage").json()
    rows = list(
        csv.DictReader(
            io.StringIO(b"".join(client.get("/usage/usage.csv").streaming_content).decode().lstrip("\ufeff"))
        )
    )
    assert len(rows) == 3
    assert sum(float(r["gpuHours"]) for r in rows) == pytest.approx(api["totals"]["gpuHours"], abs=0.1)
    by_job = {j["name"]: j["gpuHours"] for j in api["jobs"]}
    assert {r["job"]: round(float(r["gpuHours"]), 1) for r in rows} == by_job


def test_the_page_answers_a_bad_range_with_what_to_fix(client, user):
    client.force_login(user)
    answer = client.get("/usage/?from=yesterday")
    assert answer.status_code == 400 and b"From: must be a date like 2026-11-01" in answer.content
    assert client.get("/api/v2/usage?from=2026-05-01&to=2026-04-01").json()["message"] == "from: must not be after to"


def test_the_job_page_says_its_gpu_hours(ran, client, user):
    client.force_login(user)
    page = client.get(f"/jobs/{ran[0].full_name}/").content.decode()
    assert "data-job-gpu-hours" in page and " held" in page


def test_a_long_range_adds_whole_months_and_the_days_around_them_alike(user, other_user, default_vc):
    """The report reads whole months from UsageMonth, the edges from UsageDay: the same sums."""
    jobs = [create_job(owner, f"j{n}") for n, owner in enumerate((user, other_user, user))]
    start = date(2026, 1, 20)
    for n in range(80):  # 20 January to 9 April
        job = jobs[n % 3]
        UsageDay.objects.create(
            day=start + timedelta(days=n),
            job=job,
            job_name=job.full_name,
            user=job.owner,
            vc_name=f"vc{n % 2}",
            gpu_type="V100",
            gpu_seconds=3600 * (n + 1),
            gpu_used_seconds=1800 * (n + 1),
            cpu_seconds=60,
        )
    for month in (date(2026, 1, 1), date(2026, 2, 1), date(2026, 3, 1), date(2026, 4, 1)):
        roll_up_month(month)
    report = usage_report(user, True, date(2026, 1, 25), date(2026, 4, 5))
    rows = UsageDay.objects.filter(day__gte=date(2026, 1, 25), day__lte=date(2026, 4, 5))
    expected = {vc: round(sum(r.gpu_seconds for r in rows if r.vc_name == vc) / 3600, 1) for vc in ("vc0", "vc1")}
    assert {r["name"]: r["gpu_hours"] for r in report.vcs} == expected
    assert sum(r["gpu_hours"] for r in report.users) == pytest.approx(report.totals["gpu_hours"], abs=0.2)
    assert report.totals["idle_percent"] == 50


# -- a job's usage shows within one sampler period of its end ------------------------------------


def rows_of(model: type[UsageDay] | type[UsageMonth]) -> set[tuple[object, ...]]:
    return {tuple(row) for row in model.objects.values_list(*[f.attname for f in model._meta.fields if f.name != "id"])}


class Periods(threading.Event):
    """The sampler's stop event, run on the test's thread: `each(n)` after period n, stop after `last`."""

    def __init__(self, each: Callable[[int], None], last: int) -> None:
        super().__init__()
        self.each, self.last, self.count = each, last, 0

    def wait(self, timeout: float | None = None) -> bool:
        self.count += 1
        self.each(self.count)
        if self.count >= self.last:
            self.set()
        return self.is_set()


def test_it_shows_a_jobs_usage_within_one_sampler_period_of_its_end(user, default_vc, monkeypatch):
    monkeypatch.setattr("scheduling.sampler.close_old_connections", lambda: None)  # (the test's transaction)
    job = create_job(user, "short")
    now = timezone.now()

    def after(period: int) -> None:  # the job's run ends after the sampler's first period
        if period == 1:
            ended_run(job, now - timedelta(seconds=40), now - timedelta(seconds=10))

    Sampler().run(Periods(after, last=2))

    assert UsageDay.objects.get(job=job).memory_mb_seconds == 256 * 30
    assert UsageMonth.objects.get(user=user).cpu_seconds == 30


def test_the_rollup_of_ended_runs_writes_what_the_whole_days_rollup_does(user, other_user, default_vc):
    """Only the jobs whose runs ended are rolled up again, on every day their runs touched (here
    yesterday and today); every other row, and the months, come out as a whole day's rollup writes them."""
    now = timezone.now()
    today = now.astimezone(UTC).date()
    kept, ended, other = (
        create_job(owner, name) for owner, name in ((user, "kept"), (user, "ended"), (other_user, "o"))
    )
    ended_run(kept, now - timedelta(hours=3), now - timedelta(hours=2))
    roll_up_recent(now)
    after = last_ended_run()
    midnight = datetime.combine(today, datetime.min.time(), tzinfo=UTC)
    ended_run(ended, midnight - timedelta(minutes=30), min(now, midnight + timedelta(minutes=20)))
    ended_run(other, now - timedelta(minutes=5), now - timedelta(minutes=1))

    assert roll_up_ended(after, now) == last_ended_run()
    by_the_ended = rows_of(UsageDay), rows_of(UsageMonth)
    roll_up_recent(now)

    assert by_the_ended == (rows_of(UsageDay), rows_of(UsageMonth))
    assert UsageDay.objects.filter(job=ended, day=today - timedelta(days=1)).get().cpu_seconds == 30 * 60


def test_a_days_whole_seconds_keep_the_fractions_of_many_short_runs():
    day = date(2026, 12, 2)
    kept = [whole(7.3, rounding_draw(job_id, day)) for job_id in range(1, 201)]
    assert set(kept) == {7, 8}  # (each row within a second)
    assert sum(kept) == pytest.approx(200 * 7.3, rel=0.01)  # (plain rounding: 1,400, -4 %)


def test_the_job_page_counts_an_ended_run_once(user, default_vc):
    job = create_job(user, "ended", state=JobState.SUCCEEDED)
    started, finished = timezone.now() - timedelta(hours=1), timezone.now()
    ended_run(job, started, finished, gpus=[0, 1])
    job.tasks.update(state=TaskState.SUCCEEDED, attempt=1, gpus=[0, 1], started_at=started, finished_at=finished)

    assert gpu_hours_held(job) == 2.0
