"""The job page's resource plots and the cluster dashboard render with data in Chromium."""

import time

import pytest

from jobs.models import Job, JobState, TaskSample, TaskState
from scheduling.models import VcSample
from tests.factories import create_job, create_user

pytestmark = [pytest.mark.browser, pytest.mark.slow]


@pytest.fixture
def sampled_job(default_vc):
    job = create_job(create_user("alice"), "train", roles={"worker": 2}, state=JobState.RUNNING)
    job.tasks.update(state=TaskState.RUNNING)
    now = int(time.time())
    TaskSample.objects.bulk_create(
        TaskSample(task=task, at=now - 60 + 10 * i, cpu_milli=900 + i, memory_mb=100 + 20 * i, memory_limit_mb=256)
        for task in job.tasks.all()
        for i in range(6)
    )
    return job


def test_it_draws_the_jobs_cpu_and_memory_plots(page, login, sampled_job, screenshot):
    from playwright.sync_api import expect

    login("alice")
    page.goto(f"/jobs/{sampled_job.full_name}/")

    expect(page.locator("#usage[data-rendered=true]")).to_be_visible()
    expect(page.locator('[data-chart="memory"] canvas')).to_have_count(1)
    expect(page.locator('[data-chart="cpu"] .u-title')).to_have_text("CPU")
    screenshot("job-usage")


def test_a_job_that_ends_while_its_page_is_open_says_its_tasks_left_no_samples(page, login, default_vc):
    """The charts' poll (PortalCharts.poll) hears the page's job-finished: the empty text turns from
    "no samples yet" to "none were recorded"."""
    from playwright.sync_api import expect

    job = create_job(create_user("alice"), "quick", state=JobState.RUNNING)
    login("alice")
    page.goto(f"/jobs/{job.full_name}/")
    expect(page.locator("[data-usage-empty-live]")).to_be_visible()

    Job.objects.filter(pk=job.pk).update(state=JobState.SUCCEEDED)
    expect(page.locator("[data-usage-empty-ended]")).to_be_visible()
    expect(page.locator("[data-usage-empty-live]")).to_be_hidden()


def test_it_draws_the_dashboard_with_vc_history_and_the_waiting_queue(page, login, default_vc, screenshot):
    from playwright.sync_api import expect

    owner = create_user("alice")
    create_job(owner, "queued", pending_reason="needs 8 GPUs; largest free: 2 on node-b")
    now = int(time.time())
    VcSample.objects.bulk_create(
        VcSample(
            vc=default_vc,
            at=now - 600 + 60 * i,
            gpus_used=i,
            gpus_quota=8,
            jobs_waiting=1,
            jobs_running=i,
            gpus_by_type={"V100": i},
        )
        for i in range(10)
    )
    login("alice")
    page.goto("/dashboard/")

    expect(page.locator("#dashboard-history[data-rendered=true]")).to_be_visible()
    expect(page.locator('[data-chart="gpus"] canvas')).to_have_count(1)
    expect(page.locator('[data-chart="types"] canvas')).to_have_count(1)
    expect(page.locator("[data-dashboard-waiting]")).to_contain_text("needs 8 GPUs; largest free: 2 on node-b")
    screenshot("dashboard")


def test_it_plots_who_used_what_over_a_range_of_days_for_an_admin(page, login, default_vc, screenshot):
    from datetime import date, timedelta

    from playwright.sync_api import expect

    from scheduling.models import UsageDay

    admin = create_user("root", admin=True)
    bob = create_user("bob")
    job = create_job(bob, "resnet")
    day = date(2026, 11, 1)
    UsageDay.objects.bulk_create(
        UsageDay(
            day=day + timedelta(days=n),
            job=job,
            job_name=job.full_name,
            user=bob,
            vc_name="default",
            gpu_type="V100",
            gpu_seconds=8 * 3600 * (n + 1),
            gpu_used_seconds=2 * 3600 * (n + 1),
            cpu_seconds=3600,
        )
        for n in range(3)
    )
    assert admin.is_superuser
    login("root")
    page.goto("/usage/?from=2026-11-01&to=2026-11-03")
    expect(page.locator("[data-usage-chart][data-rendered=true] canvas")).to_have_count(1)
    expect(page.locator("[data-total-gpu-hours]")).to_have_text("48.0")
    expect(page.locator("[data-total-idle]")).to_have_text("75 %")
    expect(page.locator('[data-usage-table="users"] td').first).to_have_text("bob")
    screenshot("usage")


def test_it_draws_a_chart_per_training_metric_over_the_steps(page, login, default_vc, screenshot):
    from playwright.sync_api import expect

    from jobs.models import MetricPoint

    job = create_job(create_user("alice"), "train", roles={"worker": 2}, state=JobState.RUNNING)
    MetricPoint.objects.bulk_create(
        MetricPoint(job=job, task=task, name=name, step=step, value=value / (step + 1), at=0)
        for task in job.tasks.all()
        for name, value in (("loss", 2.0), ("acc", 0.9))
        for step in range(50)
    )
    login("alice")
    page.goto(f"/jobs/{job.full_name}/")

    expect(page.locator("#metrics[data-rendered=true]")).to_be_visible()
    expect(page.locator("[data-metrics-charts] canvas")).to_have_count(2)
    expect(page.locator('[data-metric="loss"] .u-title')).to_have_text("loss")
    screenshot("job-metrics")


@pytest.fixture
def one_cpu_day(default_vc):
    """A cluster without GPUs, and one day of CPU use by alice."""
    from datetime import date

    from scheduling.models import UsageDay

    alice = create_user("alice")
    job = create_job(alice, "preprocess")
    UsageDay.objects.create(
        day=date(2026, 11, 10), job=job, job_name=job.full_name, user=alice, vc_name="default", cpu_seconds=7200
    )


def test_it_draws_a_30_day_range_on_an_axis_of_those_days(page, login, one_cpu_day):
    from datetime import UTC, datetime

    from playwright.sync_api import expect

    login()
    page.goto("/usage/?from=2026-11-01&to=2026-11-30")
    expect(page.locator("[data-usage-cpu-chart][data-rendered=true] canvas")).to_have_count(1)
    x = page.evaluate("(({min, max}) => [min, max])(document.querySelector('[data-usage-cpu-chart]')._plot.scales.x)")
    assert x == [datetime(2026, 11, 1, tzinfo=UTC).timestamp(), datetime(2026, 12, 1, tzinfo=UTC).timestamp()]


def test_it_draws_no_gpu_hours_chart_on_a_cluster_without_gpus(page, login, one_cpu_day):
    from playwright.sync_api import expect

    login()
    page.goto("/usage/?from=2026-11-01&to=2026-11-30")
    expect(page.locator("[data-usage-cpu-chart][data-rendered=true] canvas")).to_have_count(1)
    expect(page.locator("[data-usage-chart]")).to_have_count(0)


def test_it_says_there_is_no_usage_instead_of_an_empty_chart(page, login, one_cpu_day):
    from playwright.sync_api import expect

    login()
    page.goto("/usage/?from=2026-10-01&to=2026-10-30")
    expect(page.locator("[data-usage-empty]")).to_have_text("No usage from 2026-10-01 to 2026-10-30.")
    expect(page.locator(".chart")).to_have_count(0)
