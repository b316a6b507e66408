"""The portal on a phone (issue 18): every page fits the screen's width, the top bar is one row
with a Menu button (issue 50: 13 links in 3 rows took 205 px) that keeps its links on its own dark
background, job names stay readable. Phone screenshots for the docs."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from jobs.actions import submit_job
from tests.browser.pages import open_the_menu, page_has_no_sideways_scroll
from tests.factories import create_job, v2_yaml

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

LONG_NAME = "resnet50-imagenet-lr0.1-batch256-warmup5-cosine"


@pytest.fixture
def finished(user, process_node, run_until):
    return run_until(submit_job(user, v2_yaml("phone-run", "echo epoch 1 loss 0.93", "echo done")), "SUCCEEDED")


@pytest.mark.parametrize("path", ["/", "/submit/", "/storage/", "/profile/", "/cluster/", "/dashboard/", "/api/docs/"])
def test_a_page_fits_a_phone_screen(phone, login, user, path):
    create_job(user, LONG_NAME.replace(".", "_"), state="RUNNING")
    login(on=phone)
    phone.goto(path)
    phone.wait_for_load_state("networkidle")
    assert page_has_no_sideways_scroll(phone)


def test_the_job_page_fits_a_phone_screen(phone, login, finished, screenshot):
    login(on=phone)
    phone.goto(f"/jobs/{finished.full_name}/")
    expect(phone.locator("pre.log")).to_contain_text("done")
    assert page_has_no_sideways_scroll(phone)
    screenshot("phone-job-detail", of=phone)


def test_the_top_bar_keeps_every_link_on_its_dark_background(phone, login, admin_user):
    login("root", on=phone)
    open_the_menu(phone)
    bar = phone.locator(".topbar").bounding_box()
    assert bar["width"] <= 390
    for link in phone.locator(".topbar a, .topbar button, .topbar select").all():
        box = link.bounding_box()
        assert bar["x"] <= box["x"] and box["x"] + box["width"] <= bar["x"] + bar["width"] + 0.5
        assert bar["y"] <= box["y"] and box["y"] + box["height"] <= bar["y"] + bar["height"] + 0.5


def test_the_top_bar_is_one_row_and_its_menu_opens_and_closes_from_the_keyboard(phone, login, admin_user):
    login("root", on=phone)
    assert phone.locator(".topbar").bounding_box()["height"] <= 56  # the brand and the Menu button
    links = phone.locator(".topbar nav a")
    assert links.count() >= 13  # every page of the portal's, People and Admin too
    for link in links.all():
        expect(link).to_be_hidden()
    phone.locator(".menu-button").focus()
    phone.keyboard.press("Enter")
    for link in [*links.all(), phone.locator(".topbar .whoami")]:
        expect(link).to_be_visible()
    phone.keyboard.press("Tab")  # the menu's first link is next
    expect(links.first).to_be_focused()
    phone.keyboard.press("Shift+Tab")
    phone.keyboard.press("Enter")
    expect(links.first).to_be_hidden()


def test_the_menu_starts_open_on_a_wide_screen_and_closed_on_a_phone(page, phone, login, user):
    """Its links reach screen readers where the bar shows them whole; the breakpoint is portal.css's
    alone (the page's script closes the menu where the stylesheet shows the Menu button)."""
    login(on=page)
    expect(page.locator("details.nav-menu")).to_have_attribute("open", "")
    login(on=phone)
    expect(phone.locator("details.nav-menu")).not_to_have_attribute("open", "")


def test_job_names_do_not_break_letter_by_letter(phone, login, user, screenshot):
    name = LONG_NAME.replace(".", "_")
    for number, state in enumerate(("RUNNING", "WAITING", "SUCCEEDED", "FAILED")):
        create_job(user, f"{name[: 20 + number]}-{number}", state=state)
    login(on=phone)
    link = phone.locator("td.job-name a").first
    assert link.bounding_box()["width"] >= 120
    assert page_has_no_sideways_scroll(phone)
    screenshot("phone-job-list", of=phone)
