"""Small helpers the browser tests share: the Submit page's buttons, waiting for a job, reading
what a page shows."""

from __future__ import annotations

from typing import Any

from jobs.models import Job


def submit_button(page: Any, panel: str) -> Any:
    return page.locator(f'[data-mode-panel="{panel}"] button[value="submit"]')


def job_named(name: str) -> Job:
    return Job.objects.get(name=name)


def exit_codes(job: Job) -> dict[str, int | None]:
    """`role-index` -> the exit code each task ended with."""
    return {f"{task.role}-{task.index}": task.exit_code for task in job.tasks.order_by("role", "index")}


def page_has_no_sideways_scroll(page: Any) -> bool:
    return bool(page.evaluate("document.documentElement.scrollWidth <= window.innerWidth"))


def visible_prose(page: Any) -> str:
    """The page's visible text, without what is data rather than words (code, logs, configs, inputs)."""
    return str(
        page.evaluate(
            """() => {
                const copy = document.body.cloneNode(true);
                const data = "code, pre, textarea, script, input, [hidden], [translate=no]";
                copy.querySelectorAll(data).forEach((e) => e.remove());
                document.body.append(copy);
                copy.style.position = "absolute";
                const text = copy.innerText;
                copy.remove();
                return text;
            }"""
        )
    )


def open_the_menu(page: Any) -> None:
    """Open the top bar's Menu, where its links are behind one (a phone's screen)."""
    if page.locator(".menu-button").is_visible() and not page.locator("details.nav-menu[open]").count():
        page.click(".menu-button")


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
