"""A sweep in real Chromium (issue 34): pasted as YAML on the submit page, its runs run on a
process node, the page sorts and filters them, and a failed run is started again from it."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from jobs.models import JobState, Sweep
from jobs.sweeps import runs
from tests.factories import v2_yaml

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

# Run 1 of three (array index 2) fails; the others succeed.
ARRAY = v2_yaml("arr", "test <% $parameters.arrayIndex %> != 2") + "extras:\n  sweep: {array: '1-3'}\n"


def test_a_sweep_is_pasted_run_sorted_filtered_and_its_failed_run_started_again(
    page, login, user, process_node, run_until, screenshot
):
    login()
    page.goto("/submit/?mode=text")
    page.fill("#id_config_text", ARRAY)
    page.click('[data-mode-panel="text"] button[value="submit"]')
    page.wait_for_url("**/sweeps/alice~arr/")
    expect(page.locator("[data-run]")).to_have_count(3)
    for job in runs(Sweep.objects.get()):
        run_until(job, JobState.SUCCEEDED, JobState.FAILED, timeout=30)
    page.reload()
    expect(page.locator('[data-run="arr-1"] [data-run-state]')).to_have_attribute("data-run-state", "FAILED")
    screenshot("sweep")

    page.click("th a:has-text('arrayIndex')")  # sorted by the value, then the other way round
    page.click("th a:has-text('arrayIndex')")
    expect(page.locator("[data-run]").first).to_have_attribute("data-run", "arr-2")
    page.select_option("[data-sweep-filter] select[name=state]", "FAILED")
    page.click("[data-sweep-filter] button")
    expect(page.locator("[data-run]")).to_have_count(1)

    page.click("[data-sweep-resubmit]")
    expect(page.locator("h1")).to_have_text("Resubmit failed runs")
    page.click("[data-confirm-resubmit]")
    page.wait_for_url("**/sweeps/alice~arr/")
    expect(page.locator(".messages")).to_contain_text("1 run started again.")
    expect(page.locator('[data-run="arr-1"] [data-run-state]')).to_have_attribute("data-run-state", "WAITING")
