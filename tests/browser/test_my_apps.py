"""My apps in real Chromium (issue 50): my live notebooks and TensorBoards across jobs, idle time
and GPUs at a glance, Open and Stop; an admin's list of everyone's, filtered by owner; at 1280 and
390 px, in English and zh-Hans, nothing wider than the screen and every target 44 px on a phone."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from jobs.models import Job
from tests.browser.pages import in_language, page_has_no_sideways_scroll
from tests.browser.test_phone_fit import SMALL_TARGETS_JS, TAP, WIDER_THAN_SCREEN_JS
from tests.factories import create_live_app

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

LONG = "resnet50-imagenet-lr0_1-batch256-warmup5-cosine-notebook"
HEADINGS = {
    "en": ("My apps", "Idle for", "GPUs held"),
    "zh-hans": ("我的应用", "已空闲", "占用的 GPU"),
}

BEFORE_JS = "cell => getComputedStyle(cell, '::before').content"


@pytest.fixture
def notebooks(user, other_user, admin_user) -> None:
    """Alice's idle notebook on 4 GPUs and her TensorBoard still starting; Bob's busy notebook."""
    create_live_app(user, LONG, gpus=4, idle_minutes=125, idle_seconds=3 * 3600)
    create_live_app(user, "tensorboard-run", kind="tensorboard")
    create_live_app(other_user, "bobs-notebook", gpus=1, idle_minutes=2)


def test_my_idle_notebook_shows_its_idle_time_and_gpus_and_its_job_stops_after_asking(page, login, notebooks):
    login("alice")
    page.click("[data-nav-apps]")
    rows = page.locator("[data-app-row]")
    expect(rows).to_have_count(2)  # none of Bob's
    notebook = rows.first
    expect(notebook.locator("[data-app-idle]")).to_contain_text("2h 05m")
    expect(notebook.locator("[data-app-gpus]")).to_have_text("4")
    expect(notebook.locator("[data-app-open]")).to_have_text("Open Jupyter")
    expect(rows.nth(1).locator("[data-app-state]")).to_have_text("Starting")
    expect(rows.nth(1).locator("[data-app-open]")).to_have_count(0)

    notebook.locator("[data-app-stop]").click()
    expect(page.locator("h1")).to_have_text("Stop job")  # the job's own confirmation
    page.click("button.danger")
    expect(page.locator(".messages")).to_contain_text(f"Stop requested for alice~{LONG}.")
    assert Job.objects.get(name=LONG).ending_cause == Job.Ending.STOP


def test_an_admin_sees_everyones_apps_with_their_owners_and_filters_by_one(page, login, notebooks, screenshot):
    login("root")
    page.goto("/apps/")
    expect(page.locator("[data-app-row]")).to_have_count(3)
    expect(page.locator("[data-app-owner-cell]").first).to_have_text("alice")  # the longest idle first
    screenshot("my-apps")
    page.select_option("[data-app-owner]", "bob")
    page.click("[data-app-filter] button")
    expect(page.locator("[data-app-row]")).to_have_count(1)
    expect(page.locator("[data-app-job]")).to_have_attribute("data-app-job", "bob~bobs-notebook")
    expect(page.locator("[data-app-open]")).to_have_count(0)  # a notebook is its owner's session


def test_a_user_with_no_apps_is_told_how_to_get_one(page, login, user):
    login("alice")
    page.goto("/apps/")
    expect(page.locator("[data-apps-empty]")).to_contain_text("Tick Jupyter or TensorBoard under Tools")


@pytest.mark.parametrize("language", ["en", "zh-hans"])
def test_it_reads_at_1280_px_with_open_and_stop_in_view(page, login, notebooks, language):
    login("root")
    page.goto("/apps/")
    in_language(page, language)
    title, idle, gpus = HEADINGS[language]
    expect(page.locator("h1")).to_have_text(title)
    expect(page.locator("thead")).to_contain_text(idle)
    expect(page.locator("thead")).to_contain_text(gpus)
    assert page_has_no_sideways_scroll(page)
    for button in page.locator("[data-app-row] .button").all():
        box = button.bounding_box()
        assert box is not None and box["x"] + box["width"] <= 1280


@pytest.mark.parametrize("language", ["en", "zh-hans"])
def test_it_fits_a_phone_as_cards_with_44_px_targets(phone, login, notebooks, language):
    login("root", on=phone)
    phone.goto("/apps/")
    in_language(phone, language)
    title, idle, gpus = HEADINGS[language]
    expect(phone.locator("h1")).to_have_text(title)
    expect(phone.locator("thead")).to_be_hidden()
    notebook = phone.locator("[data-app-row]").first
    for cell, label in (("[data-app-idle]", idle), ("[data-app-gpus]", gpus)):  # each cell says what it is
        assert label in notebook.locator(cell).evaluate(BEFORE_JS)
    assert phone.evaluate(WIDER_THAN_SCREEN_JS)["width"] <= 390
    assert phone.evaluate(SMALL_TARGETS_JS, TAP) == []
