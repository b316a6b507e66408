"""Sharing in real Chromium (issue 50): alice shares a saved template with her group from its edit
page and bob, a member, starts a job from it (read-only to him); carol, in no group of alice's,
never sees it; alice shares a notebook on My apps and bob finds it there, "shared by alice". At
1280 px, and the pages fit a 390-px phone."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest
from playwright.sync_api import expect

from jobs import job_templates
from jobs.models import Job
from tests.browser.pages import page_has_no_sideways_scroll
from tests.browser.test_phone_fit import WIDER_THAN_SCREEN_JS
from tests.factories import create_live_app, password_for, v2_yaml

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

CONFIG = v2_yaml("train", "echo lr=<% $parameters.lr %>", extra="parameters: {lr: 0.1}\n")


@pytest.fixture
def other_page(browser, live_server) -> Iterator[Callable[..., Any]]:
    """Another person's browser (its own cookies), 1280 px wide or a phone's 390."""
    contexts = []

    def open_as(username: str, width: int = 1280) -> Any:
        context = browser.new_context(base_url=live_server.url, viewport={"width": width, "height": 900})
        contexts.append(context)
        page = context.new_page()
        page.goto("/login/")
        page.fill("#id_username", username)
        page.fill("#id_password", password_for(username))
        page.click("button[type=submit]")
        page.wait_for_url("**/")
        return page

    yield open_as
    for context in contexts:
        context.close()


def test_alice_shares_a_saved_template_with_her_group_and_bob_starts_a_job_from_it(
    page, login, other_page, user, team, stranger
):
    template = job_templates.save(user, name="team run", config_text=CONFIG, summary="lr baseline")
    login("alice")
    page.goto(f"/templates/{template.pk}/")
    page.click("[data-template-edit]")
    page.select_option("[data-template-who]", "group:vision")
    page.click("[data-template-form] button[type=submit]")
    expect(page.locator(".messages")).to_contain_text("Template team run saved.")
    expect(page.locator("[data-template-who]")).to_contain_text("Shared with group vision")
    page.click("[data-crumb-templates]")
    expect(page).to_have_url(f"{page.url.split('/templates/')[0]}/templates/")
    assert page_has_no_sideways_scroll(page)

    bob = other_page("bob")
    bob.goto("/templates/")
    card = bob.locator('[data-template="team run"]')
    expect(card).to_contain_text("by alice")
    card.locator("h2 a").click()
    expect(bob.locator("[data-template-edit]")).to_have_count(0)  # read-only to a member
    bob.fill("[data-template-start] input[name='p.lr']", "0.02")
    bob.click("[data-template-start] button[type=submit]")
    expect(bob.locator("#id_parameters")).to_have_value("lr=0.02")
    bob.click('[data-mode-panel="form"] button[value="submit"]')
    bob.wait_for_url("**/jobs/bob~train/")
    assert Job.objects.get(name="train").owner.get_username() == "bob"

    carol = other_page("carol")
    carol.goto("/templates/")
    expect(carol.locator('[data-template="team run"]')).to_have_count(0)
    assert carol.goto(f"/templates/{template.pk}/").status == 404


def test_the_template_pages_fit_a_phone(other_page, user, team):
    template = job_templates.save(user, name="team run", config_text=CONFIG, shared_with_group="vision")
    alice = other_page("alice", width=390)
    for path in ("/templates/", f"/templates/{template.pk}/", f"/templates/{template.pk}/edit/"):
        alice.goto(path)
        expect(alice.locator("h1")).to_be_visible()
        assert alice.evaluate(WIDER_THAN_SCREEN_JS)["width"] <= 390, path
    bob = other_page("bob", width=390)
    bob.goto(f"/templates/{template.pk}/")
    expect(bob.locator("[data-template-who]")).to_contain_text("Shared with group vision")
    assert bob.evaluate(WIDER_THAN_SCREEN_JS)["width"] <= 390


def test_alice_shares_a_notebook_on_my_apps_and_bob_finds_it_shared_by_her(page, login, other_page, user, team):
    create_live_app(user, "notebook", idle_minutes=3)
    login("alice")
    page.goto("/apps/")
    row = page.locator('[data-app-job="alice~notebook"]')
    row.locator("[data-app-share] select").select_option("vision")
    row.locator("[data-app-share] button").click()
    expect(page.locator(".messages")).to_contain_text("Group vision's members may open notebook's app now.")
    assert page_has_no_sideways_scroll(page)

    bob = other_page("bob", width=390)
    bob.goto("/apps/")
    shared = bob.locator('[data-app-job="alice~notebook"]')
    expect(shared.locator("[data-app-shared-by]")).to_have_text("shared by alice")
    expect(shared.locator("[data-app-open]")).to_be_visible()
    expect(shared.locator("[data-app-stop]")).to_have_count(0)
    assert bob.evaluate(WIDER_THAN_SCREEN_JS)["width"] <= 390
