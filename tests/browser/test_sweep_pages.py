"""A sweep in real Chromium (issue 34): pasted as YAML on the submit page, its runs run on a
process node, the page sorts and filters them, and a failed run is started again from it."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from jobs.models import JobState, Sweep
from jobs.sweeps import runs
from tests.browser.english import english_on
from tests.browser.test_phone_fit import SMALL_TARGETS_JS, TAP, WIDER_THAN_SCREEN_JS
from tests.browser.test_phone_fit import SWEEP as LONG_NAMES
from tests.experiments.test_sweep_comparison import report_loss
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


@pytest.fixture
def printed_sweep(user, process_node, run_until) -> Sweep:
    """PRINTING run on a process node, its printed metrics read by the sampler."""
    from jobs.sweeps import submit_sweep
    from scheduling.training_metrics import MetricReader

    reader = MetricReader()
    reader.read()  # (the sampler, running before the sweep)
    sweep = submit_sweep(user, PRINTING)
    for job in runs(sweep):
        run_until(job, JobState.SUCCEEDED, timeout=30)
    reader.read()
    return sweep


def test_a_sweeps_printed_metrics_are_plotted_compared_and_its_best_run_submitted_again(
    page, login, printed_sweep, screenshot
):
    login()
    page.goto("/sweeps/alice~arr/")

    expect(page.locator("#sweep-compare[data-rendered=true] canvas")).to_have_count(1)
    expect(page.locator("#sweep-compare[data-charts-rendered=true]")).to_have_count(1)
    expect(page.locator("[data-best-run]")).to_contain_text("arr-0")
    screenshot("sweep-compare")
    page.click("[data-best-run] a:has-text('arr-0')")
    expect(page.locator("#metrics[data-rendered=true] [data-metric=loss] canvas")).to_have_count(1)
    page.go_back()
    page.click("[data-best-submit]")
    expect(page.locator("#id_name")).to_have_value("arr-0-clone")


def test_a_sweeps_runs_are_drawn_against_their_values_a_mark_each_and_a_mark_opens_its_run(page, login, printed_sweep):
    login()
    page.goto("/sweeps/alice~arr/")

    expect(page.locator("[data-scatter=arrayIndex] circle.mark")).to_have_count(3)
    expect(page.locator("[data-sweep-parallel] polyline.mark")).to_have_count(3)
    expect(page.locator("[data-sweep-parallel] .axis")).to_have_count(2)  # arrayIndex and the loss
    page.hover('[data-scatter] circle.mark[data-i="2"]')
    expect(page.locator("[data-picked-run]")).to_have_text("arr-2")
    expect(page.locator('[data-sweep-parallel] polyline.picked[data-i="2"]')).to_have_count(1)
    page.click('[data-scatter] circle.mark[data-i="2"]')
    page.wait_for_url("**/jobs/alice~arr-2/")


@pytest.fixture
def long_sweep(user) -> Sweep:
    """LONG_NAMES (12 runs: a learning rate, warmup epochs, an optimizer by name), each with a loss."""
    from jobs.sweeps import submit_sweep

    sweep = submit_sweep(user, LONG_NAMES)
    for index, run in enumerate(runs(sweep)):
        report_loss(run, [2.0, 1.0, 0.05 * (index + 1)])
    return sweep


def test_a_sweeps_charts_fit_a_phone_and_a_tap_names_a_run_before_a_second_opens_it(phone, login, long_sweep):
    login(on=phone)
    phone.goto(f"/sweeps/{long_sweep.full_name}/")
    first = runs(long_sweep)[0].name

    expect(phone.locator("[data-sweep-parallel] polyline.mark")).to_have_count(12)
    expect(phone.locator("[data-scatter=optimizer] circle.mark")).to_have_count(12)
    assert phone.evaluate(WIDER_THAN_SCREEN_JS)["width"] <= 390
    assert phone.evaluate(SMALL_TARGETS_JS, TAP) == []
    phone.locator('[data-scatter=learning_rate] circle.mark[data-i="0"]').tap()
    expect(phone.locator("[data-picked-run]")).to_have_text(first)
    assert phone.url.endswith(f"/sweeps/{long_sweep.full_name}/")
    phone.locator('[data-scatter=learning_rate] circle.mark[data-i="0"]').tap()
    phone.wait_for_url(f"**/jobs/alice~{first}/")


def test_a_sweeps_charts_in_chinese_show_no_english(chinese, login, long_sweep):
    login(on=chinese)
    chinese.goto(f"/sweeps/{long_sweep.full_name}/")

    expect(chinese.locator("#sweep-compare[data-charts-rendered=true]")).to_have_count(1)
    expect(chinese.locator("[data-sweep-charts] h3").first).to_have_text("指标与各参数的关系")
    assert english_on(chinese) == []
