"""Where each page's Help link goes: the section of the documentation site about that page.

One table, from the page's URL name to its section under /docs/ (MkDocs' folder of the page, then
its heading's anchor); a page not listed opens the site's home. A Chinese reader gets the Chinese
page where docs/zh/ has one (its headings' anchors differ, so the page's top), else the English
section. tests/web/test_help_links.py checks that every target is a page and heading of docs/.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.conf import settings
from django.http import HttpRequest
from django.utils.translation import get_language

from web.route_urls import route_url

SECTIONS: dict[str, str] = {
    "jobs:list": "user/pages/",
    "jobs:submit": "user/first-job/#from-the-browser-step-by-step",
    "jobs:detail": "user/why/",
    "jobs:stop": "user/priorities/",
    "jobs_ssh:terminal": "user/ssh/",
    "storage:browse": "user/storage/",
    "sweeps:list": "user/sweeps/#sweeps-and-job-arrays",
    "sweeps:detail": "user/sweeps/#sweeps-and-job-arrays",
    "templates:list": "user/sweeps/#job-templates",
    "templates:new": "user/sweeps/#job-templates",
    "templates:detail": "user/sweeps/#job-templates",
    "my_apps:list": "user/apps/#my-apps-every-app-of-yours-in-one-place",
    "jobs_usage:report": "user/watching/#usage",
    "webhooks:list": "user/watching/#webhooks",
    "profile": "user/api/",
    "scheduling:overview": "user/why/#how-jobs-are-placed-and-why-one-waits",
    "scheduling:dashboard": "admin/monitoring/",
    "alerts:list": "admin/monitoring/#alerts",
    "people:users": "admin/sign-in/#groups-and-the-people-pages",
    "people:user": "admin/sign-in/#groups-and-the-people-pages",
    "people:import": "admin/sign-in/#groups-and-the-people-pages",
    "people:groups": "admin/sign-in/#groups-and-the-people-pages",
    "people:group": "admin/sign-in/#groups-and-the-people-pages",
    "people:audit": "admin/sign-in/#groups-and-the-people-pages",
    "login": "user/first-job/",
}
CHINESE_HOME = "zh/"
CHINESE = Path(settings.BASE_DIR) / "docs" / "zh"
# The pages docs/zh/ translates, as their English folders ("user/first-job/").
CHINESE_PAGES = {f"{path.relative_to(CHINESE).with_suffix('')}/" for path in CHINESE.rglob("*.md")}


def section_for(view_name: str | None, chinese: bool) -> str:
    """The page's section under /docs/ (no leading slash; "" is the site's home)."""
    section = SECTIONS.get(view_name or "", "")
    if not chinese:
        return section
    page = section.split("#")[0]
    if page in CHINESE_PAGES:
        return f"zh/{page}"
    return section or CHINESE_HOME


def help_link(request: HttpRequest) -> dict[str, Any]:
    """The context processor: `help_url`, the top bar's Help link of this page."""
    match = getattr(request, "resolver_match", None)
    chinese = get_language() == "zh-hans"
    return {"help_url": route_url("help:docs") + section_for(match.view_name if match else None, chinese)}
