"""Issue 36's page pass for the phone: at 390x844 no page of the portal is wider than the screen
(the job list with 50 rows scrolled sideways to 1229 px, the profile to 559 px, the terminal to
417 px), and every button, link and checkbox in a page's main content is a 44 px tap target, and
so is every link of the top bar (its menu open) and of the crumbs above a page's title (issue 50:
the user-name link was 47x23). At 1366 px the job list fits its box: Stop, Clone and the waiting
reason need no sideways scroll."""

from __future__ import annotations

from typing import Any

import pytest
from django.utils import timezone

from clusters.grants import create_group
from clusters.models import VirtualCluster
from jobs import job_templates
from jobs.models import InteractiveApp, Job
from jobs.sweeps import submit_sweep
from tests.browser.pages import open_the_menu
from tests.factories import create_job, create_user, v2_yaml

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

LONG_REASON = (
    "waiting for resources: needs 4 GPUs of type a100-80gb on one node in virtual cluster research; "
    "the biggest free block is 2 on node gpu-worker-17.cluster.internal (1 queued job ahead)"
)
TAP = 44

WIDER_THAN_SCREEN_JS = """() => {
    const screen = window.innerWidth;
    const wide = [];
    for (const element of document.querySelectorAll("body *")) {
        const box = element.getBoundingClientRect();
        if (box.width && box.right > screen + 0.5 && !element.closest(".table-wrap, .xterm")) {
            wide.push(element.tagName.toLowerCase() + "." + element.className + " right=" + Math.round(box.right));
        }
    }
    return { width: document.scrollingElement.scrollWidth, wide: wide.slice(0, 8) };
}"""

SMALL_TARGETS_JS = """(least) => {
    const small = [];
    const targets = document.querySelectorAll(
        "main a[href], main button, main input[type=checkbox], main input[type=radio], main select, main summary, "
        + ".topbar a[href], .topbar button, .topbar select, .topbar summary");
    for (const element of targets) {
        if (!element.checkVisibility()) continue;
        // A link inside a sentence is text, not a target (WCAG 2.5.8's inline exception); crumbs are not.
        if (element.matches("a") && element.closest("p, li, dd, td.prose, .hint, .muted, .empty")
            && !element.matches(".button, .crumbs a")) continue;
        // A checkbox is tapped through its label.
        const target = element.matches("input") ? (element.closest("label") || element) : element;
        const box = target.getBoundingClientRect();
        if (box.width < least - 0.5 || box.height < least - 0.5) {
            small.push(element.tagName.toLowerCase() + "." + element.className + " '"
                + (element.textContent || element.name || "").trim().slice(0, 20) + "' "
                + Math.round(box.width) + "x" + Math.round(box.height));
        }
    }
    return small;
}"""


# A sweep whose run names and values are long, as a learning-rate search's are.
SWEEP = v2_yaml("resnet50-imagenet-lr-search-cosine-warmup", "sleep 30") + (
    "extras:\n  sweep: {grid: {learning_rate: [0.1, 0.01, 0.001], warmup_epochs: [5, 10], "
    "optimizer: [adam_with_decoupled_weight_decay, sgd]}, maxConcurrent: 4}\n"
)


@pytest.fixture
def portal(admin_user) -> dict[str, str]:
    """An admin's portal with 50 jobs on the list, long names and long waiting reasons."""
    for number in range(49):  # and bob's below: 50 on the admin's list
        create_job(
            admin_user,
            f"resnet50-imagenet-lr0_1-batch256-warmup5-cosine-{number:02d}",
            state="WAITING" if number % 2 else "RUNNING",
            pending_reason=LONG_REASON if number % 2 else "",
        )
    job = Job.objects.filter(state="RUNNING").earliest("id")
    with_apps = Job.objects.filter(state="RUNNING").latest("id")
    with_apps.tasks.update(state="RUNNING", ports={"jupyter": [20001], "web": [20002]})
    for kind, label in (("jupyter", "jupyter"), ("http", "web")):
        InteractiveApp.objects.create(
            job=with_apps,
            kind=kind,
            role="worker",
            port_label=label,
            slug=f"phone{kind}",
            idle_seconds=3600,
            ready_at=timezone.now() if kind == "jupyter" else None,
        )
    someone_elses = create_job(create_user("bob"), "bobs-notebook", state="WAITING")
    InteractiveApp.objects.create(
        job=someone_elses, kind="jupyter", role="worker", port_label="jupyter", slug="phonebob"
    )
    VirtualCluster.objects.create(name="computer-vision-large-models")
    create_group(
        admin_user,
        "computer_vision_large_models",
        description="Everyone training vision models on the large nodes",
        external_name="cn=computer-vision-large-models,ou=groups,dc=example,dc=org",
        vcs=["computer-vision-large-models"],
    )
    return {
        "job list, 50 rows": "/?size=50",
        "people: users": "/people/",
        "people: a user": "/people/users/bob/",
        "people: groups": "/people/groups/",
        "people: a group": "/people/groups/computer_vision_large_models/",
        "people: import": "/people/import/",
        "people: audit": "/people/audit/",
        "profile": "/profile/",
        "webhooks": "/profile/webhooks/",
        "usage": "/usage/",
        "alerts (admins)": "/alerts/",
        "terminal": f"/jobs/{job.full_name}/terminal/worker/0/",
        "submit": "/submit/",
        "job page": f"/jobs/{job.full_name}/",
        "job page with apps": f"/jobs/{with_apps.full_name}/",
        "an app not yours": "/apps/phonebob/open/",
        "stop confirmation": f"/jobs/{job.full_name}/stop/",
        "stop selected": f"/jobs/stop-selected/?ids={job.pk}",
        "cluster": "/cluster/",
        "dashboard (admins)": "/dashboard/",
        "storage": "/storage/",
        "API docs": "/api/docs/",
        "Django admin": "/admin/",
        "Django admin: jobs": "/admin/jobs/job/",
        "Django admin: a job": f"/admin/jobs/job/{job.pk}/change/",
    }


PAGES = [
    "job list, 50 rows",
    "people: users",
    "people: a user",
    "people: groups",
    "people: a group",
    "people: import",
    "people: audit",
    "profile",
    "webhooks",
    "usage",
    "alerts (admins)",
    "terminal",
    "submit",
    "job page",
    "job page with apps",
    "an app not yours",
    "stop confirmation",
    "stop selected",
    "cluster",
    "dashboard (admins)",
    "storage",
    "API docs",
    "Django admin",
    "Django admin: jobs",
    "Django admin: a job",
]


def open_page(phone: Any, login: Any, path: str) -> None:
    login("root", on=phone)
    phone.goto(path)
    phone.wait_for_load_state("networkidle")
    open_the_menu(phone)  # its links are checked too


@pytest.mark.parametrize("name", PAGES)
def test_no_page_is_wider_than_a_phone(phone, login, portal, name):
    open_page(phone, login, portal[name])
    found = phone.evaluate(WIDER_THAN_SCREEN_JS)
    assert found["width"] <= 390, (name, found)


@pytest.mark.parametrize(
    "name", [name for name in PAGES if name not in {"terminal", "API docs"} and "Django" not in name]
)
def test_every_tap_target_in_a_page_is_44_px(phone, login, portal, name):
    open_page(phone, login, portal[name])
    assert phone.evaluate(SMALL_TARGETS_JS, TAP) == []


@pytest.fixture
def sweep_pages(admin_user) -> dict[str, str]:
    sweep = submit_sweep(admin_user, SWEEP)
    template = job_templates.save(admin_user, name="resnet50 imagenet lr search", config_text=SWEEP)
    return {
        "sweeps": "/sweeps/",
        "sweep page": f"/sweeps/{sweep.full_name}/",
        "sweep stop confirmation": f"/sweeps/{sweep.full_name}/stop/",
        "templates": "/templates/",
        "a template": f"/templates/{template.pk}/",
        "new template": "/templates/new/",
        "edit template": f"/templates/{template.pk}/edit/",
    }


@pytest.mark.parametrize(
    "name",
    ["sweeps", "sweep page", "sweep stop confirmation", "templates", "a template", "new template", "edit template"],
)
def test_no_sweep_or_template_page_is_wider_than_a_phone_and_its_targets_are_44_px(phone, login, sweep_pages, name):
    open_page(phone, login, sweep_pages[name])
    assert phone.evaluate(WIDER_THAN_SCREEN_JS)["width"] <= 390
    assert phone.evaluate(SMALL_TARGETS_JS, TAP) == []


def test_the_job_list_fits_its_box_at_1366_px(page, login, portal):
    page.set_viewport_size({"width": 1366, "height": 768})
    login("root")
    page.goto("/?size=50")
    wrap = page.locator(".job-table").locator("xpath=..")
    assert wrap.evaluate("box => box.scrollWidth <= box.clientWidth"), wrap.evaluate(
        "b => [b.scrollWidth, b.clientWidth]"
    )
    assert page.evaluate("document.scrollingElement.scrollWidth") <= 1366
    for action in page.locator("td.row-actions .button").all()[:4]:
        box = action.bounding_box()
        assert box["x"] + box["width"] <= 1366


def test_a_long_waiting_reason_is_shortened_with_the_whole_of_it_at_hand(page, login, portal):
    login("root")
    page.goto("/?size=50")
    why = page.locator("td.why").filter(has_text="waiting for resources").first
    assert why.get_attribute("title") == LONG_REASON
    assert why.evaluate("cell => cell.scrollWidth > cell.clientWidth")  # cut with an ellipsis on screen
    why.click()  # a tap opens the whole reason in place
    assert why.evaluate("cell => cell.classList.contains('expanded') && cell.scrollWidth <= cell.clientWidth")


def test_a_column_heading_sorts_the_list_and_keeps_its_filters(page, login, portal):
    login("root")
    page.goto("/?state=WAITING&size=50")
    page.locator("th a.sort", has_text="Why waiting").click()
    page.wait_for_url("**sort=why**")
    assert "state=WAITING" in page.url
    assert page.locator("th a[aria-sort=ascending]").inner_text().lower() == "why waiting"
    assert page.locator("tbody tr").count() == 25
