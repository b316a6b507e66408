"""Every page in Simplified Chinese (issue 18): a walk through the portal with LANGUAGE_CODE
zh-hans finds no English string of the catalog on any page, whatever the page shows (errors,
exits, events, why a job waits, confirmations)."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

from jobs.actions import submit_job
from jobs.storage import areas as storage
from tests.browser.pages import visible_prose
from tests.factories import create_job, v2_yaml
from tests.web.test_translations import po_entries

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

PLACEHOLDER = re.compile(r"%\(\w+\)[sd]|%[sd]|\{\w+\}|<[^>]+>")


def english_fragments() -> list[str]:
    """Each translated message's English text between its placeholders and markup."""
    fragments = set()
    for msgid, msgstr in po_entries():
        if msgstr == msgid:
            continue  # the same in both languages (IP, SSH, API...)
        for fragment in PLACEHOLDER.split(msgid.replace('\\"', '"')):
            fragment = fragment.strip(" .,:;()“”\"'…·-")
            if re.search(r"[A-Za-z]{3}", fragment):
                fragments.add(fragment)
    return sorted(fragments, key=len, reverse=True)


def english_on(page) -> list[str]:
    text = visible_prose(page)
    return [f for f in english_fragments() if re.search(rf"(?<![A-Za-z]){re.escape(f)}(?![A-Za-z])", text)]


@pytest.fixture
def chinese(settings, browser, live_server):
    """The portal set to Chinese, in a browser that asks for Chinese."""
    settings.LANGUAGE_CODE = "zh-hans"
    context = browser.new_context(base_url=live_server.url, viewport={"width": 1280, "height": 900}, locale="zh-CN")
    context.set_default_timeout(10_000)
    yield context.new_page()
    context.close()


@pytest.fixture
def walked_jobs(user, process_node, run_until):
    """A failed job that was retried (attempts, exit, events) and a job that waits (why)."""
    failed = run_until(submit_job(user, v2_yaml("shibai", "exit 1", role_extra="    taskRetryCount: 1\n")), "FAILED")
    waiting = create_job(user, "dengdai", pending_reason="no schedulable node in the cluster")
    return failed, waiting


def test_no_page_shows_an_english_string_of_the_catalog(chinese, login, user, walked_jobs, settings, tmp_path):
    failed, waiting = walked_jobs
    settings.PAI_FS_ROOT = tmp_path / "fs"
    (storage.user_area(user.username) / "shuju").mkdir()
    (storage.user_area(user.username) / "shuju" / "a.txt").write_text("1")
    page = chinese
    found: dict[str, list[str]] = {}

    def check(name: str) -> None:
        page.wait_for_load_state("networkidle")
        english = english_on(page)
        if english:
            found[name] = english

    page.goto("/login/")
    check("login")
    login(on=page)
    check("list")
    page.goto("/?q=meiyou")
    check("empty list")
    page.goto("/submit/")
    check("submit")
    page.fill("#id_name", "bad name!")
    page.fill("#id_parameters", "steps 100")
    page.fill("#roles-0-memory_mb", "10")
    page.click('[data-mode-panel="form"] button[value="submit"]')
    expect(page.locator("[data-error-summary]")).to_be_visible()
    check("submit with errors")
    page.click('[data-mode-panel="form"] button[value="to_yaml"]')
    check("edit yaml")
    page.goto(f"/jobs/{failed.full_name}/")
    expect(page.locator("pre.log")).not_to_have_text("")
    check("failed job")
    page.goto(f"/jobs/{waiting.full_name}/")
    check("waiting job")
    page.goto(f"/jobs/{waiting.full_name}/stop/")
    check("stop confirmation")
    page.goto(f"/jobs/stop-selected/?ids={waiting.pk}")
    check("bulk stop confirmation")
    page.goto("/storage/")
    check("storage")
    page.locator('tr[data-entry="shuju"] button[value="delete"]').click()
    check("delete confirmation")
    page.goto("/profile/")
    page.fill("#token-name", "jiaoben")
    page.click(".token-form button")
    check("profile")
    page.goto("/cluster/")
    check("cluster")
    page.goto("/dashboard/")
    check("dashboard")
    assert found == {}
