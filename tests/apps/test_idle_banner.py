"""The idle warning inside an app's own pages, in Chromium: shown once the watcher warned, and
gone with the warning after "Keep it running" (which counts as the app's traffic)."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import pytest
from django.utils import timezone
from playwright.sync_api import Page, Route, expect

from jobs.models import InteractiveApp

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def app_page(serving_job, browser_at, user, chromium, monkeypatch) -> Iterator[tuple[InteractiveApp, Page]]:
    """An app's page open on a phone, its idle clock started by that page's own request."""
    monkeypatch.setenv("DJANGO_ALLOW_ASYNC_UNSAFE", "true")  # (Playwright's loop in this thread)
    app = serving_job("http", idle_seconds=600)
    at = browser_at(app, user)
    name, value = at.cookie.split("=", 1)
    with (
        chromium() as browser,
        contextlib.closing(browser.new_context(viewport={"width": 390, "height": 844}, locale="en-US")) as context,
    ):
        context.add_cookies([{"name": name, "value": value, "url": at.origin}])
        page = context.new_page()
        page.goto(f"{at.origin}/page")  # (itself traffic: the clock starts again)
        yield app, page


def warn(app: InteractiveApp) -> None:
    """What scheduling/app_watch.py does to an app nobody used for a while."""
    InteractiveApp.objects.filter(pk=app.pk).update(
        last_activity_at=timezone.now() - timedelta(seconds=500), idle_warned_at=timezone.now()
    )


def test_an_app_about_to_be_stopped_for_idling_says_so_and_keeps_running_when_asked(app_page):
    app, page = app_page
    warning = page.locator("#pai-idle-warning")
    expect(warning).to_have_count(0)
    warn(app)  # (the page stays open, nobody uses it)
    page.evaluate("window.paiIdleCheck()")  # (what the page's next look, every 15 s, shows)
    expect(warning).to_contain_text("stops in about")
    expect(warning).to_contain_text(app.job.full_name)
    page.locator("#pai-keep-running").click()
    expect(warning).to_be_hidden()
    app.refresh_from_db()
    assert app.idle_warned_at is None and app.last_activity_at is not None


def test_an_earlier_looks_late_answer_does_not_bring_the_warning_back(app_page):
    app, page = app_page
    warning = page.locator("#pai-idle-warning")
    warn(app)
    held: list[Route] = []

    def hold_the_first_look(route: Route) -> None:
        if held:
            route.continue_()
        else:
            held.append(route)

    page.route("**/.pai/status", hold_the_first_look)
    page.evaluate("window.paiIdleCheck()")  # (its answer is held back)
    page.evaluate("window.paiIdleCheck()")
    expect(warning).to_contain_text("stops in about")
    page.locator("#pai-keep-running").click()
    expect(warning).to_be_hidden()
    stale: dict[str, Any] = {"warned": True, "message": "stale", "keep": "Keep it running"}
    held[0].fulfill(json=stale)  # the first look's answer arrives after "keep running"
    page.evaluate("new Promise(function (done) { setTimeout(done, 300); })")
    expect(warning).to_have_count(0)
