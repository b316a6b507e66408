"""Names and headings break where words do (issue 50): the dashboard's job names were broken
mid-word beside a long reason, and the zh-Hans attempts table wrapped one character per line."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from jobs.actions import submit_job
from tests.browser.pages import mid_word_breaks
from tests.factories import create_job, v2_yaml

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

LONG_NAME = "resnet50_imagenet_lr0.1_batch256_warmup5_cosine"
LINES_JS = """(element) => {
    const range = document.createRange();
    range.selectNodeContents(element);
    return new Set([...range.getClientRects()].filter((box) => box.width).map((box) => Math.round(box.top))).size;
}"""
LONG_REASON = (
    "waiting for resources: needs 4 GPUs of type a100-80gb on one node in virtual cluster research; "
    "the biggest free block is 2 on node gpu-worker-17.cluster.internal (1 queued job ahead)"
)


@pytest.mark.parametrize("width", [1280, 390])
def test_the_dashboards_job_names_break_between_their_words(page, login, admin_user, width):
    create_job(admin_user, LONG_NAME, pending_reason=LONG_REASON)
    page.set_viewport_size({"width": width, "height": 900})
    login("root")
    page.goto("/dashboard/")
    name = page.locator("[data-dashboard-waiting] td a").first
    expect(name).to_have_text(f"root~{LONG_NAME}")
    assert mid_word_breaks(name) == []


def test_the_attempts_table_in_chinese_keeps_each_heading_time_and_link_on_one_line(
    page, login, user, process_node, run_until
):
    job = run_until(submit_job(user, v2_yaml("failed-once", "echo about to fail", "exit 3")), "FAILED", "SUCCEEDED")
    login()
    page.goto(f"/jobs/{job.full_name}/")
    page.select_option("#language-select", "zh-hans")
    expect(page.locator("#attempts h2")).to_have_text("尝试记录")
    cells = page.locator("#attempts th, #attempts td:not(.attempt-exit)")
    lines = {cell.inner_text(): cell.evaluate(LINES_JS) for cell in cells.all()}
    assert "查看日志" in lines and set(lines.values()) == {1}, lines
