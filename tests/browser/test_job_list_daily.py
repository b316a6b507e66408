"""The job list as a researcher uses it every day (issue 18): tasks, GPUs and why-waiting columns,
row actions, bulk stop with confirmation, page numbers, ticking durations, times with their time
zone, an empty filter that says so and a user filter that matches part of a name; at 1280 px a job
is one line (issue 50)."""

from __future__ import annotations

import re
from datetime import timedelta

import pytest
from django.utils import timezone
from playwright.sync_api import expect

from jobs.models import Job
from tests.factories import create_job, normalized_spec

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


LONG_NAME = "resnet50-imagenet-lr0_1-batch256-warmup5-cosine-annealing"
LONG_REASON = "waiting for resources: needs 4 GPUs of type a100-80gb on one node; the biggest free block is 2"
ONE_LINE_ROW_PX = 50  # a line of text, or the row's small buttons, and the cell's padding


def row(page, job: Job):
    return page.locator(f'tr[data-job-id="{job.pk}"]')


def test_it_shows_tasks_gpus_and_why_a_job_waits(page, login, user):
    spec = normalized_spec("big", {"ps": 1, "worker": 3})
    spec["taskRoles"]["worker"]["resourcePerInstance"]["gpu"] = 2
    job = create_job(
        user, "big", roles={"ps": 1, "worker": 3}, spec=spec, pending_reason="no schedulable node in the cluster"
    )
    login()
    expect(row(page, job).locator("td.task-count")).to_have_text("4")
    expect(row(page, job).locator("td.gpu-count")).to_have_text("6")
    expect(row(page, job).locator("td.why")).to_have_text("no schedulable node in the cluster")


def test_it_sorts_waiting_jobs_by_their_expected_start_said_as_an_estimate(page, login, user):
    later = create_job(user, "later", expected_start_at=timezone.now() + timedelta(hours=2))
    sooner = create_job(user, "sooner", expected_start_at=timezone.now() + timedelta(hours=1))
    unknown = create_job(user, "unknown")
    login()
    page.get_by_role("link", name="Expected start").click()
    expect(page.locator("tr[data-job-id] td.job-name")).to_have_text(["sooner", "later", "unknown"])
    cell = row(page, sooner).locator("td.expected-start")
    expect(cell).to_have_attribute("title", re.compile(r"\(an estimate from recent jobs' run times"))
    expect(row(page, unknown).locator("td.expected-start")).to_have_text("unknown")
    assert later.pk


def test_each_row_offers_stop_and_clone(page, login, user):
    job = create_job(user, "acting", state="RUNNING")
    login()
    row(page, job).get_by_role("link", name="Stop").click()
    expect(page.locator("h1")).to_have_text("Stop job")
    page.go_back()
    row(page, job).get_by_role("link", name="Clone").click()
    expect(page.locator("#id_name")).to_have_value("acting-clone")


def test_it_stops_ticked_jobs_after_a_confirmation(page, login, user):
    jobs = [create_job(user, f"sweep-{number}", state="RUNNING") for number in range(3)]
    login()
    for job in jobs[:2]:
        row(page, job).locator("input[name=ids]").check()
    page.get_by_role("button", name="Stop selected…").click()
    expect(page.locator("[data-jobs-to-stop] li")).to_have_count(2)
    page.get_by_role("button", name="Stop 2 jobs").click()
    expect(page.locator(".messages")).to_contain_text("Stop requested for 2 jobs")
    stops = {job.name: job.execution_type for job in Job.objects.order_by("name")}
    assert stops == {"sweep-0": "STOP", "sweep-1": "STOP", "sweep-2": "START"}


def test_it_offers_page_numbers(page, login, user):
    for number in range(45):
        create_job(user, f"many-{number:02d}")
    login()
    pager = page.locator(".page-numbers")
    expect(pager.get_by_role("link")).to_have_text(["2", "3"])
    pager.get_by_role("link", name="3").click()
    expect(page.locator(".job-table tbody tr")).to_have_count(5)
    expect(page.locator('.page-numbers [aria-current="page"]')).to_have_text("3")


def test_a_running_jobs_duration_ticks(page, login, user):
    job = create_job(user, "ticking", state="RUNNING", launched_at=timezone.now() - timedelta(seconds=70))
    login()
    duration = row(page, job).locator("[data-tick-from]")
    before = duration.inner_text()
    expect(duration).not_to_have_text(before, timeout=3000)
    expect(duration).to_have_text(re.compile(r"^1m \d\ds$"))


def test_times_carry_their_time_zone(page, login, user):
    job = create_job(user, "zoned")
    login()
    expect(row(page, job).locator("time")).to_have_text(re.compile(r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC$"))


def test_an_empty_filter_says_nothing_matches(page, login, user):
    create_job(user, "present")
    login()
    page.goto("/?q=absent")
    expect(page.locator("[data-empty-list]")).to_contain_text("No jobs match these filters.")
    page.get_by_role("link", name="Show all jobs").click()
    expect(page.get_by_role("link", name="present")).to_be_visible()


def test_the_user_filter_matches_part_of_a_name(page, login, user, other_user):
    create_job(other_user, "bobs-job")
    login()
    page.fill("input[name=user]", "bo")
    page.get_by_role("button", name="Filter").click()
    expect(page.get_by_role("link", name="bobs-job")).to_be_visible()


def test_each_job_is_one_line_at_1280_px_its_long_name_cut_and_whole_in_its_title(page, login, admin_user):
    """Issue 50: rows were two and three lines tall at 1280 px (20 jobs took 2,080 px)."""
    for number in range(20):
        state = ("WAITING", "RUNNING", "SUCCEEDED", "FAILED")[number % 4]
        reason = LONG_REASON if state == "WAITING" else ""
        create_job(admin_user, f"{LONG_NAME}-{number:02d}", state=state, pending_reason=reason)
    login("root")
    page.goto("/")  # an admin's list has the widest rows: a User column too
    rows = page.locator(".job-table tbody tr")
    expect(rows).to_have_count(20)
    heights = rows.evaluate_all("rows => rows.map((row) => row.offsetHeight)")
    assert max(heights) <= ONE_LINE_ROW_PX, heights
    wrap = page.locator(".table-wrap")
    assert wrap.evaluate("box => box.scrollWidth <= box.clientWidth")  # and no sideways scroll for it
    name = page.locator("td.job-name a").first
    expect(name).to_have_attribute("title", f"{LONG_NAME}-19")
    assert name.evaluate("link => link.parentElement.scrollWidth > link.parentElement.clientWidth")  # cut: …
