"""Every page in Simplified Chinese (issues 18 and 36): a walk through the portal with LANGUAGE_CODE
zh-hans finds no English on any page, whatever the page shows (errors, exits, events, why a job
waits, confirmations, charts, the 404 page, the admin): no English string of the catalog, and no
visible text holding a common English word (tests/browser/english.py), which also finds texts
that never went through the catalog (a script's chart legend, Django's own pages)."""

from __future__ import annotations

import time

import pytest
from django.contrib.auth.models import Group
from django.utils import timezone
from playwright.sync_api import expect

from catalogue import Message
from clusters.grants import create_group
from clusters.models import VirtualCluster
from jobs import job_templates
from jobs.actions import submit_job
from jobs.models import InteractiveApp, JobState, TaskSample, TaskState
from jobs.storage import areas as storage
from jobs.sweeps import submit_sweep
from scheduling.models import Alert, AlertRule, VcSample
from scheduling.usage_rollup import roll_up
from tests.browser.pages import EnglishWalk
from tests.factories import create_job, create_user, v2_yaml

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def walked_jobs(user, process_node, run_until):
    """A failed job that was retried (attempts, exit, events), a job that waits (why), one that
    can never fit, and a running job with samples (its charts)."""
    failed = run_until(submit_job(user, v2_yaml("shibai", "exit 1", role_extra="    taskRetryCount: 1\n")), "FAILED")
    waiting = create_job(
        user, "dengdai", pending_reason=[Message.of("reason.quota.cpu", vc="default", used=8, limit=8, need=1)]
    )
    submit_job(user, v2_yaml("taida", cpu=64))
    running = create_job(user, "yunxing", roles={"worker": 2}, state=JobState.RUNNING)
    running.tasks.update(state=TaskState.RUNNING)
    now = int(time.time())
    TaskSample.objects.bulk_create(
        TaskSample(task=task, at=now - 60 + 10 * i, cpu_milli=900, memory_mb=100 + 20 * i, memory_limit_mb=256)
        for task in running.tasks.all()
        for i in range(6)
    )
    VcSample.objects.bulk_create(
        VcSample(
            vc=failed.virtual_cluster,
            at=now - 600 + 60 * i,
            gpus_used=i,
            gpus_quota=8,
            jobs_waiting=1,
            jobs_running=i,
            gpus_by_type={"V100": i},
        )
        for i in range(10)
    )
    run_until(submit_job(user, v2_yaml("shashi", "kill -9 $$")), "FAILED")
    run_until(submit_job(user, v2_yaml("meiyouminling", "no-such-command-here")), "FAILED")
    return failed, waiting, running


SWEEP = v2_yaml("sou", "sleep 30") + "extras:\n  sweep: {grid: {lr: [0.1, 0.01], seed: [1, 2]}, maxConcurrent: 2}\n"


def test_no_page_shows_an_english_string_of_the_catalog(
    chinese, login, user, walked_jobs, settings, tmp_path, scheduler
):
    failed, waiting, running = walked_jobs
    settings.PAI_FS_ROOT = tmp_path / "fs"
    (storage.user_area(user.username) / "shuju").mkdir()
    (storage.user_area(user.username) / "shuju" / "a.txt").write_text("1")
    page = chinese
    walk = EnglishWalk(page)

    page.goto("/login/")
    walk.check("login")
    login(on=page)
    walk.check("list")
    page.goto("/?q=meiyou")
    walk.check("empty list")
    page.goto("/submit/")
    walk.check("submit")
    page.fill("#id_name", "bad name!")
    page.fill("#id_parameters", "steps 100")
    page.fill("#roles-0-memory_mb", "10")
    page.click('[data-mode-panel="form"] button[value="submit"]')
    expect(page.locator("[data-error-summary]")).to_be_visible()
    walk.check("submit with errors")
    page.click('[data-mode-panel="form"] button[value="to_yaml"]')
    walk.check("edit yaml")
    page.goto("/submit/?mode=text")
    page.fill("#id_config_text", "name: [broken\n  taskRoles: {")
    page.click('[data-mode-panel="text"] button[value="submit"]')
    expect(page.locator(".line-errors")).to_be_visible()
    walk.check("yaml syntax error")
    page.goto(f"/jobs/{failed.full_name}/")
    expect(page.locator("pre.log")).not_to_have_text("")
    walk.check("failed job")
    for name in ("shashi", "meiyouminling"):
        page.goto(f"/jobs/alice~{name}/")
        expect(page.locator("[data-diagnosis]")).to_be_visible()
        walk.check(f"failed job {name}")
    page.goto(f"/jobs/{waiting.full_name}/")
    walk.check("waiting job")
    page.goto(f"/jobs/{running.full_name}/")
    expect(page.locator("[data-usage-charts] canvas").first).to_be_visible()
    walk.check("running job with charts")
    role = running.tasks.earliest("id").role
    for kind, ready in (("jupyter", True), ("tensorboard", False)):
        InteractiveApp.objects.create(
            job=running,
            kind=kind,
            role=role,
            port_label=kind,
            slug=f"walk{kind}",
            idle_seconds=3600,
            ready_at=timezone.now() if ready else None,
            idle_warned_at=timezone.now() if ready else None,
        )
    page.goto(f"/jobs/{running.full_name}/")
    expect(page.locator("[data-job-apps]")).to_be_visible()
    walk.check("running job with apps")
    InteractiveApp.objects.create(
        job=create_job(create_user("bob"), "bobs-notebook"),
        kind="jupyter",
        role="worker",
        port_label="jupyter",
        slug="walkbob",
    )
    page.goto("/apps/walkbob/open/")
    walk.check("an app not yours")
    page.goto(f"/jobs/{waiting.full_name}/stop/")
    walk.check("stop confirmation")
    page.goto(f"/jobs/stop-selected/?ids={waiting.pk}")
    walk.check("bulk stop confirmation")
    sweep = submit_sweep(user, SWEEP)
    scheduler.run_once()  # (the runs beyond the cap say why they wait)
    page.goto("/sweeps/")
    walk.check("sweeps")
    page.goto(f"/sweeps/{sweep.full_name}/")
    walk.check("sweep page")
    page.goto(f"/sweeps/{sweep.full_name}/?state=NONE")
    walk.check("sweep page, no run matches")
    page.goto(f"/sweeps/{sweep.full_name}/stop/")
    walk.check("sweep stop confirmation")
    page.goto(f"/sweeps/{sweep.full_name}/resubmit/")
    walk.check("sweep resubmit confirmation")
    page.goto("/jobs/alice~sou-2/")
    walk.check("a run of a sweep, held")
    template = job_templates.save(user, name="moban", config_text=v2_yaml("moban", extra="parameters: {lr: 0.1}\n"))
    page.goto("/templates/")
    walk.check("templates")
    page.goto("/templates/?q=meiyou")
    walk.check("templates, none found")
    page.goto(f"/templates/{template.pk}/")
    walk.check("a template")
    page.goto(f"/templates/new/?from={failed.full_name}")
    walk.check("new template")
    page.fill("textarea[name=config_text]", v2_yaml("x", memory_mb=10))
    page.click("[data-template-form] button[type=submit]")
    walk.check("new template with errors")
    page.goto(f"/templates/{template.pk}/edit/")
    walk.check("template edit")
    page.goto(f"/templates/{template.pk}/delete/")
    walk.check("template delete confirmation")
    page.goto("/storage/")
    walk.check("storage")
    page.locator('tr[data-entry="shuju"] button[value="delete"]').click()
    walk.check("delete confirmation")
    page.goto("/profile/")
    page.fill("#token-name", "jiaoben")
    page.click(".token-form button")
    walk.check("profile")
    page.goto("/profile/webhooks/")
    page.fill("#webhook-url", "http://10.0.0.7/hook")
    page.click("[data-webhook-form] button[type=submit]")
    expect(page.locator("[data-webhook-error]")).to_be_visible()
    walk.check("webhooks, a refused URL")
    page.goto("/cluster/")
    walk.check("cluster")
    page.goto("/dashboard/")
    expect(page.locator("#dashboard-history[data-rendered=true]")).to_be_visible()
    expect(page.locator("[data-dashboard-never-fit]")).to_be_visible()
    walk.check("dashboard")
    rule = AlertRule.objects.create(name="kongxian", condition="gpu_idle", actions=["notify_owner", "stop_job"])
    Alert.objects.create(
        rule=rule,
        subject=f"job {running.full_name}",
        job=running,
        summary="s",
        fired_at=timezone.now(),
        stop_at=timezone.now(),
        history=[
            {"at": "", "what": said.text, "message": said.as_dict()}
            for said in (Message.of("alert.fired"), Message.of("alert.notified", user="alice"))
        ],
    )
    page.goto("/alerts/")
    walk.check("alerts")
    roll_up(timezone.now().date())
    page.goto("/usage/")
    walk.check("usage")
    page.goto("/usage/?from=zuotian")
    walk.check("usage, a bad range")
    page.goto("/no-such-page/")
    walk.check("404")
    # The docs themselves stay English (docs/user/pages.md: "The API docs stay English"); they say so in Chinese.
    page.goto("/api/docs/")
    expect(page.locator("[data-docs-language]")).to_contain_text("API 文档是英文的")
    walk.assert_none()


ADMIN_PAGES = [
    "/admin/",
    "/admin/jobs/job/",
    "/admin/clusters/virtualcluster/",
    "/admin/clusters/virtualcluster/add/",
    "/admin/clusters/node/",
    "/admin/clusters/gputype/",
    "/admin/clusters/storageconfig/",
    "/admin/auth/user/",
    "/admin/auth/user/add/",
]


def test_no_admin_page_shows_english(chinese, login, admin_user, walked_jobs):
    """Django's admin ships its own zh_Hans; the portal's models, fields and actions are translated."""
    failed, _waiting, _running = walked_jobs
    page = chinese
    login("root", on=page)
    walk = EnglishWalk(page)
    walk.visit(
        *ADMIN_PAGES,
        f"/admin/jobs/job/{failed.pk}/change/",
        f"/admin/clusters/node/{failed.tasks.first().node_id}/change/",
    )
    walk.assert_none()


def test_no_people_page_shows_english(chinese, login, admin_user, user):
    """The People pages in Chinese, their refusals too (a bad group name, a CSV with bad rows)."""
    VirtualCluster.objects.create(name="shijue")
    create_group(admin_user, "shijue", description="视觉组", vcs=["shijue"])
    user.groups.add(Group.objects.get(name="shijue"))
    page = chinese
    login("root", on=page)
    walk = EnglishWalk(page)
    walk.visit("/people/", "/people/?q=meiyou", "/people/users/alice/", "/people/groups/")
    page.goto("/people/groups/shijue/")
    walk.check("a group")
    page.goto("/people/groups/shijue/delete/")
    walk.check("delete a group")
    page.goto("/people/groups/")
    page.fill("#id_name", "bu xing")
    page.click("[data-group-form] button[type=submit]")
    expect(page.locator('[data-field-error="name"]')).to_be_visible()
    walk.check("a bad group name")
    page.goto("/people/import/")
    walk.check("import")
    page.fill("#csv-text", "username,password,email,admin,virtual cluster,groups\nalice,123,x,maybe,meiyou,meiyou\n")
    page.click("[data-import-form] button[type=submit]")
    expect(page.locator("[data-import-errors]")).to_be_visible()
    walk.check("import with errors")
    page.goto("/people/audit/")
    walk.check("audit")
    walk.assert_none()
