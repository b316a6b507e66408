"""The job page as a researcher uses it every day (issue 18): the log viewer (what is left out,
the full log, search, every attempt), a clean "Start again", advice that fits a finished job,
event labels, the timeline, the favicon and the API docs link; no dead port links, a search
result opened in its context, no note on the log's tail over search results (issue 50)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from playwright.sync_api import expect

from clusters.models import Node
from jobs.actions import submit_job
from jobs.models import InteractiveApp
from tests.factories import create_job, v2_yaml

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

LONG_LOG = v2_yaml("long-log", "seq 1 30000")  # about 170 KB, more than the page's 64 KB window
RETRIED = v2_yaml("retried", "echo run at $(date +%s%N)", "exit 1", role_extra="    taskRetryCount: 1\n")


@pytest.fixture
def finished_job(user, process_node, run_until):
    """A job of `user` run to its end on the process executor."""

    def run(config: str):
        return run_until(submit_job(user, config), "SUCCEEDED", "FAILED", "STOPPED")

    return run


def test_the_log_says_its_beginning_is_left_out_and_starts_at_a_whole_line(page, login, finished_job):
    job = finished_job(LONG_LOG)
    login()
    page.goto(f"/jobs/{job.full_name}/")
    expect(page.locator("[data-log-truncated]")).to_contain_text("Showing the last")
    expect(page.locator("pre.log")).to_contain_text("30000")
    first_line = page.locator("pre.log").inner_text().splitlines()[0]
    last_line = page.locator("pre.log").inner_text().splitlines()[-1]
    assert int(first_line) + len(page.locator("pre.log").inner_text().splitlines()) - 1 == int(last_line)


def test_it_downloads_the_full_log(page, login, finished_job, tmp_path):
    job = finished_job(LONG_LOG)
    login()
    page.goto(f"/jobs/{job.full_name}/")
    with page.expect_download() as download:
        page.click("[data-log-download]")
    saved = tmp_path / "full.log"
    download.value.save_as(saved)
    assert saved.read_text().splitlines() == [str(number) for number in range(1, 30001)]


def test_it_filters_the_log_by_a_search(page, login, finished_job):
    job = finished_job(LONG_LOG)
    login()
    page.goto(f"/jobs/{job.full_name}/")
    expect(page.locator("pre.log")).to_contain_text("29999")
    page.fill("[data-log-search]", "2999")
    expect(page.locator("[data-log-matches]")).to_contain_text("contain")
    lines = page.locator("pre.log").inner_text().splitlines()
    assert lines and all("2999" in line for line in lines)
    expect(page.locator("pre.log mark").first).to_have_text("2999")


def test_it_searches_the_whole_log_and_numbers_the_lines(page, login, finished_job):
    """Issue 36: the search saw the page's 64 KB only; line 12345 of 30000 is far before them."""
    job = finished_job(LONG_LOG)
    login()
    page.goto(f"/jobs/{job.full_name}/")
    expect(page.locator("pre.log")).to_contain_text("29999")
    assert "\n12345\n" not in page.locator("pre.log").inner_text()
    page.fill("[data-log-search]", "12345")
    expect(page.locator("[data-log-matches]")).to_have_text("1 of 30000 lines contain “12345”.")
    expect(page.locator("pre.log .log-line-number")).to_have_text(["12345"])
    expect(page.locator("pre.log mark")).to_have_text(["12345"])


def test_a_search_result_opens_in_its_context_in_the_whole_log(page, login, finished_job):
    """Issue 50: a result could not be opened where it is; line 12345 is far before the page's 64 KB."""
    job = finished_job(LONG_LOG)
    login()
    page.goto(f"/jobs/{job.full_name}/")
    expect(page.locator("pre.log")).to_contain_text("29999")
    page.fill("[data-log-search]", "12345")
    page.locator("pre.log a.log-line-number", has_text="12345").click()

    context = page.locator("[data-log-context]")
    expect(context).to_contain_text("Lines 12305\u201312385 of the whole log, around line 12345.")
    numbers = page.locator("pre.log .log-line-number")
    expect(numbers).to_have_count(81)
    expect(numbers.first).to_have_text("12305")
    hit = page.locator("pre.log .log-line-hit")
    expect(hit.locator("mark")).to_have_text("12345")
    log_box, hit_box = page.locator("pre.log").bounding_box(), hit.bounding_box()
    assert log_box["y"] <= hit_box["y"] and hit_box["y"] + hit_box["height"] <= log_box["y"] + log_box["height"]
    assert "line=12345" in page.url  # the place has an address: opened again, it shows the same lines

    context.get_by_role("button", name="Back").click()
    expect(page.locator("[data-log-matches]")).to_have_text("1 of 30000 lines contain “12345”.")
    expect(numbers).to_have_text(["12345"])


def test_the_note_on_the_logs_left_out_beginning_is_not_shown_over_search_results(page, login, finished_job):
    job = finished_job(LONG_LOG)
    login()
    page.goto(f"/jobs/{job.full_name}/")
    note = page.locator("[data-log-truncated]")
    expect(note).to_contain_text("Showing the last")
    page.fill("[data-log-search]", "12345")
    expect(page.locator("[data-log-matches]")).to_contain_text("1 of 30000 lines")
    expect(note).to_be_hidden()  # the results are of the whole log
    page.fill("[data-log-search]", "")
    expect(note).to_be_visible()


def test_each_task_in_the_task_table_opens_its_own_log(page, login, finished_job):
    job = finished_job(v2_yaml("pair", "echo I am task $PAI_TASK_INDEX", instances=2))
    second = job.tasks.get(index=1)
    login()
    page.goto(f"/jobs/{job.full_name}/")
    expect(page.locator("pre.log")).to_contain_text("I am task 0")
    page.locator(f'.task-table [data-log-link="task:{second.pk}"]').click()
    expect(page.locator("pre.log")).to_contain_text("I am task 1")
    expect(page.locator("[data-log-source]")).to_have_value(f"task:{second.pk}")


def test_it_shows_stdout_stderr_or_both_in_order(page, login, finished_job):
    job = finished_job(v2_yaml("streams", "echo out", "sleep 0.3", "echo err >&2", "sleep 0.3", "echo out-again"))
    login()
    page.goto(f"/jobs/{job.full_name}/")
    expect(page.locator("[data-log-stream] option:checked")).to_have_text("stdout + stderr, in order")
    expect(page.locator("pre.log")).to_have_text("out\nerr\nout-again\n")
    page.select_option("[data-log-stream]", "stderr")
    expect(page.locator("pre.log")).to_have_text("err\n")
    expect(page.locator("[data-log-download]")).to_have_attribute("href", re.compile(r"stream=stderr"))
    page.select_option("[data-log-stream]", "stdout")
    expect(page.locator("pre.log")).to_have_text("out\nout-again\n")
    page.reload()
    expect(page.locator("[data-log-stream] option:checked")).to_have_text("stdout only")


def test_it_shows_every_attempt_and_an_earlier_attempts_log(page, login, finished_job):
    job = finished_job(RETRIED)
    first, second = job.attempts.order_by("attempt")
    login()
    page.goto(f"/jobs/{job.full_name}/")
    expect(page.locator(".attempt-table tbody tr")).to_have_count(2)
    expect(page.locator(f'tr[data-attempt="attempt:{first.pk}"]')).to_contain_text("255")
    page.locator(f'[data-log-link="attempt:{first.pk}"]').click()
    expect(page.locator("pre.log")).to_have_text(Path(first.log_path).read_text())
    assert Path(first.log_path).read_text() != Path(second.log_path).read_text()


def test_start_again_shows_a_clean_waiting_job(page, login, finished_job):
    job = finished_job(v2_yaml("again"))
    login()
    page.goto(f"/jobs/{job.full_name}/")
    expect(page.locator("pre.log")).to_contain_text("hello")
    page.get_by_role("button", name="Start again").click()
    expect(page.locator("[data-job-state]")).to_have_text("Waiting")
    expect(page.locator("[data-job-started]")).to_have_text("—")
    expect(page.locator("[data-job-duration]")).to_have_text("—")
    expect(page.locator("[data-job-attempt]")).to_contain_text("1 earlier run")
    expect(page.locator("pre.log")).to_have_text("(no output yet)")


def test_a_failed_job_with_no_retry_left_promises_no_next_retry(page, login, finished_job):
    job = finished_job(v2_yaml("failing", "exit 1"))
    login()
    page.goto(f"/jobs/{job.full_name}/")
    expect(page.locator("[data-diagnosis]")).to_contain_text("Check container log")
    expect(page.locator("[data-diagnosis]")).not_to_contain_text("Wait result from next retry")


def test_events_show_their_kind_in_words_and_whole_dots(page, login, finished_job):
    job = finished_job(v2_yaml("evented"))
    login()
    page.goto(f"/jobs/{job.full_name}/")
    kinds = page.locator(".event-kind")
    expect(kinds.filter(has_text="Task exited")).to_have_count(1)
    expect(kinds.filter(has_text="task-exit")).to_have_count(0)
    dots_inside = page.evaluate(
        """() => {
            const list = document.querySelector(".timeline").getBoundingClientRect();
            return Array.from(document.querySelectorAll(".timeline li")).every((item) => {
                const dot = getComputedStyle(item, "::before");
                return item.getBoundingClientRect().left + parseFloat(dot.left) >= list.left;
            });
        }"""
    )
    assert dots_inside


def test_the_pages_have_a_favicon_and_link_the_api_docs(page, login, user):
    login()
    icon = page.locator("link[rel=icon]").get_attribute("href")
    assert page.request.get(icon).ok
    page.get_by_role("link", name="API", exact=True).click()
    page.wait_for_url("**/api/docs/")


def test_it_answers_favicon_ico_for_pages_without_the_portals_frame_signed_in_or_not(page, login, admin_user):
    # The Django admin names no icon: a browser asks /favicon.ico, before signing in as well.
    assert page.request.get("/favicon.ico").headers["content-type"] == "image/svg+xml"
    login("root")
    page.goto("/admin/")
    assert page.locator("link[rel=icon]").count() == 0
    assert page.request.get("/favicon.ico").headers["content-type"] == "image/svg+xml"


def test_it_changes_a_waiting_jobs_priority_class_from_the_page(page, login, user, default_vc):
    job = submit_job(user, v2_yaml("queued"))  # (no scheduler runs: it waits)
    login()
    page.goto(f"/jobs/{job.full_name}/")
    expect(page.locator("[data-job-priority]")).to_have_attribute("data-job-priority", "test")
    page.select_option("select[name=priority_class]", "prod")
    page.click("[data-job-priority] button")
    expect(page.locator("[data-job-priority]")).to_have_attribute("data-job-priority", "prod")
    job.refresh_from_db()
    assert (job.priority_class, job.priority) == ("prod", 100)


def test_it_shows_task_ports_as_text_and_links_only_what_the_proxy_serves(page, login, user):
    """Issue 50: every port was a link to http://<node>:<port>, where nothing answers HTTP (ssh,
    rendezvous) and a researcher's browser seldom reaches a node at all."""
    job = create_job(user, "notebook", state="RUNNING")
    node = Node.objects.create(name="n1", address="127.0.0.2")
    job.tasks.update(state="RUNNING", node=node, ports={"ssh": [20001], "rendezvous": [20002], "jupyter": [20003]})
    InteractiveApp.objects.create(job=job, kind="jupyter", role="worker", port_label="jupyter", slug="nb")
    login()
    page.goto(f"/jobs/{job.full_name}/")
    expect(page.locator("[data-task-port]")).to_have_text(["127.0.0.2:20001", "127.0.0.2:20002"])
    expect(page.locator("a", has_text="jupyter:20003")).to_have_attribute("href", "/apps/nb/open/")
    expect(page.locator("a[href^='http://127.0.0.2']")).to_have_count(0)
