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


# Each run prints its loss at steps 1..3: 10 * index / step (the run of index 1, arr-0, is best).
PRINTING = (
    v2_yaml(
        "arr",
        r"""'for s in 1 2 3; do echo "PAI_METRIC {\"step\": $s, \"loss\": """
        r"""$((10 * <% $parameters.arrayIndex %> / s))}"; done'""",
    )
    + "extras:\n  sweep: {array: '1-3'}\n"
)


def test_a_sweeps_printed_metrics_are_plotted_compared_and_its_best_run_submitted_again(
    page, login, user, process_node, run_until, screenshot
):
    from jobs.sweeps import submit_sweep
    from scheduling.training_metrics import MetricReader

    reader = MetricReader()
    reader.read()  # (the sampler, running before the sweep)
    sweep = submit_sweep(user, PRINTING)
    for job in runs(sweep):
        run_until(job, JobState.SUCCEEDED, timeout=30)
    reader.read()
    login()
    page.goto("/sweeps/alice~arr/")

    expect(page.locator("#sweep-compare[data-rendered=true] canvas")).to_have_count(1)
    expect(page.locator("[data-best-run]")).to_contain_text("arr-0")
    screenshot("sweep-compare")
    page.click("[data-best-run] a:has-text('arr-0')")
    expect(page.locator("#metrics[data-rendered=true] [data-metric=loss] canvas")).to_have_count(1)
    page.go_back()
    page.click("[data-best-submit]")
    expect(page.locator("#id_name")).to_have_value("arr-0-clone")
