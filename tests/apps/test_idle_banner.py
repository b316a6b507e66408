"""The idle warning inside an app's own pages, in Chromium: shown once the watcher warned, and
gone with the warning after "Keep it running" (which counts as the app's traffic)."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone
from playwright.sync_api import expect

from jobs.models import InteractiveApp

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_an_app_about_to_be_stopped_for_idling_says_so_and_keeps_running_when_asked(
    serving_job, browser_at, user, chromium, monkeypatch
):
    monkeypatch.setenv("DJANGO_ALLOW_ASYNC_UNSAFE", "true")  # (Playwright's loop in this thread)
    app = serving_job("http", idle_seconds=600)
    at = browser_at(app, user)
    name, value = at.cookie.split("=", 1)
    with chromium() as browser:
        context = browser.new_context(viewport={"width": 390, "height": 844}, locale="en-US")
        context.add_cookies([{"name": name, "value": value, "url": at.origin}])
        page = context.new_page()
        page.goto(f"{at.origin}/page")  # (itself traffic: the clock starts again)
        warning = page.locator("#pai-idle-warning")
        expect(warning).to_have_count(0)
        # The page stays open, nobody uses it; the watcher warns (scheduling/app_watch.py)...
        InteractiveApp.objects.filter(pk=app.pk).update(
            last_activity_at=timezone.now() - timedelta(seconds=500), idle_warned_at=timezone.now()
        )
        page.evaluate("window.paiIdleCheck()")  # ...which the page's next look (every 15 s) shows
        expect(warning).to_contain_text("stops in about")
        expect(warning).to_contain_text(app.job.full_name)
        page.locator("#pai-keep-running").click()
        expect(warning).to_be_hidden()
        app.refresh_from_db()
        assert app.idle_warned_at is None and app.last_activity_at is not None
        context.close()
