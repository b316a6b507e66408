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
