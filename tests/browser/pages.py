"""Small helpers the browser tests share: the Submit page's buttons, waiting for a job, reading
what a page shows, switching its language, walking pages for English left in Chinese."""

from __future__ import annotations

from typing import Any

from playwright.sync_api import expect

from jobs.models import Job
from tests.browser.english import english_on


def submit_button(page: Any, panel: str) -> Any:
    return page.locator(f'[data-mode-panel="{panel}"] button[value="submit"]')


def job_named(name: str) -> Job:
    return Job.objects.get(name=name)


def exit_codes(job: Job) -> dict[str, int | None]:
    """`role-index` -> the exit code each task ended with."""
    return {f"{task.role}-{task.index}": task.exit_code for task in job.tasks.order_by("role", "index")}


def page_has_no_sideways_scroll(page: Any) -> bool:
    return bool(page.evaluate("document.documentElement.scrollWidth <= window.innerWidth"))


def open_the_menu(page: Any) -> None:
    """Open the top bar's Menu, where its links are behind one (a phone's screen)."""
    if page.locator(".menu-button").is_visible() and not page.locator("details.nav-menu[open]").count():
        page.click(".menu-button")


def in_language(page: Any, language: str) -> None:
    """Switch the page to `language` with the top bar's menu (behind its Menu on a phone); "en" stays."""
    if language != "en":
        open_the_menu(page)
        page.select_option("#language-select", language)
        expect(page.locator("html")).to_have_attribute("lang", language)


class EnglishWalk:
    """A walk through pages in Chinese: `check(name)` on each page notes the English it shows (once
    the page is idle), `visit(*paths)` goes to each and checks it, `assert_none()` at the end names
    every page that showed some."""

    def __init__(self, page: Any) -> None:
        self.page = page
        self.found: dict[str, list[str]] = {}

    def check(self, name: str) -> None:
        self.page.wait_for_load_state("networkidle")
        english = english_on(self.page)
        if english:
            self.found[name] = english

    def visit(self, *paths: str) -> None:
        for path in paths:
            self.page.goto(path)
            self.check(path)

    def assert_none(self) -> None:
        assert self.found == {}, "\n".join(f"{name}: {english}" for name, english in self.found.items())


# Where a text's lines break: each break as "abc|def", unless after a space or a name's separator.
MID_WORD_BREAKS_JS = """(element) => {
    const breaks = [];
    const walker = document.createTreeWalker(element, NodeFilter.SHOW_TEXT);
    let top = null, before = "";
    for (let text = walker.nextNode(); text; text = walker.nextNode()) {
        for (let at = 0; at < text.length; at++) {
            const range = document.createRange();
            range.setStart(text, at);
            range.setEnd(text, at + 1);
            const box = range.getBoundingClientRect();
            if (!box.height) continue;
            if (top !== null && box.top > top + 1 && !/[\\s\\-_~./]$/.test(before)) {
                breaks.push(before.slice(-4) + "|" + text.data.slice(at, at + 4));
            }
            top = box.top;
            before += text.data[at];
        }
    }
    return breaks;
}"""


def mid_word_breaks(locator: Any) -> list[str]:
    """Where the element's text breaks inside a word (or a name between its separators)."""
    return list(locator.evaluate(MID_WORD_BREAKS_JS))
