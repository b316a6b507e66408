"""The VC pages in real Chromium (issue 50): an admin makes a VC from the cluster page, a share
over 100 % in all is refused in its field before anything is saved, a VC's page shows its jobs,
usage and who may use it, its form changes its queue, its removal asks first and refuses while a
job names it; a user gets the portal's 403 page. At 1280 and 390 px, in English and zh-Hans:
nothing wider than the screen, every target 44 px on a phone, no English left in Chinese."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import Group
from playwright.sync_api import expect

from clusters.models import Gpu, GpuType, Node, VirtualCluster
from jobs.models import JobState
from tests.browser.pages import EnglishWalk, in_language, page_has_no_sideways_scroll
from tests.browser.test_phone_fit import SMALL_TARGETS_JS, TAP, WIDER_THAN_SCREEN_JS
from tests.factories import create_job

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

HEADINGS = {"en": ("Virtual clusters", "Running and waiting jobs"), "zh-hans": ("虚拟集群", "运行和等待中的作业")}


@pytest.fixture
def shijue(default_virtual_cluster, user, other_user, admin_user) -> VirtualCluster:
    """A 40 % VC of an 8-GPU node (default keeps 60 %) for alice and the group shijue (bob), a job
    running and one waiting."""
    default_virtual_cluster.share_percent = 60
    default_virtual_cluster.save()
    node = Node.objects.create(name="gpu-1", address="10.0.0.8", cpus=32, memory_mb=131072)
    v100 = GpuType.objects.create(name="V100")
    Gpu.objects.bulk_create(Gpu(node=node, index=index, gpu_type=v100) for index in range(8))
    vc = VirtualCluster.objects.create(name="shijue", share_percent=40, user_gpu_limit=2)
    group = Group.objects.create(name="shijue")
    other_user.groups.add(group)
    vc.allowed_users.set([user])
    vc.allowed_groups.set([group])
    create_job(user, "xunlian", state=JobState.RUNNING, virtual_cluster=vc)
    create_job(user, "dengdai", virtual_cluster=vc)
    return vc


@pytest.fixture
def kong(shijue) -> VirtualCluster:
    """A VC no job names, at 0 %."""
    return VirtualCluster.objects.create(name="kong", share_percent=0)


def test_an_admin_makes_a_vc_from_the_cluster_page_and_a_share_over_100_percent_is_refused_in_its_field(
    page, login, shijue
):
    login("root")
    page.goto("/cluster/")
    page.click("[data-manage-vcs]")
    page.click("[data-vc-new]")
    expect(page.locator("[data-share-room]")).to_contain_text("add up to 100%: up to 0% is left")
    page.fill("#id_name", "vision")
    page.fill("#id_share_percent", "40")
    page.select_option("#id_queue_policy", "best-effort")
    page.click("[data-vc-save]")
    expect(page.locator('[data-field-error="share_percent"]')).to_contain_text("would add up to 140%")
    expect(page.locator("[data-vc-refused]")).to_be_visible()
    assert not VirtualCluster.objects.filter(name="vision").exists()
    page.fill("#id_share_percent", "0")
    page.click("[data-vc-save]")
    expect(page.locator("h1")).to_have_text("vision")
    expect(page.locator(".messages")).to_contain_text("VC vision was created.")
    expect(page.locator("[data-vc-queue]")).to_contain_text("Best-effort FIFO")


def test_a_vcs_page_shows_its_jobs_usage_and_who_may_use_it_and_its_form_changes_its_queue(
    page, login, shijue, screenshot
):
    login("root")
    page.click("[data-nav-vcs]")
    page.click('[data-vc-row="shijue"] a')
    expect(page.locator("[data-vc-job]")).to_have_count(2)
    expect(page.locator("[data-vc-job-counts]")).to_have_text("1 running, 1 waiting")
    expect(page.locator("[data-vc-now] td").first).to_have_text("0 / 3")  # 40 % of 8 GPUs, apportioned
    expect(page.locator("[data-vc-gpu-hours]")).to_have_text("0")
    expect(page.locator("[data-vc-users]")).to_have_text("alice")
    expect(page.locator("[data-vc-groups]")).to_contain_text("shijue 1 member")
    screenshot("vc-page")
    page.click("[data-vc-edit]")
    page.select_option("#id_queue_policy", "fair-share")
    page.uncheck("#id_backfill")
    page.click("[data-vc-save]")
    expect(page.locator(".messages")).to_contain_text("Saved.")
    expect(page.locator("[data-vc-queue]")).to_have_text(
        "Fair share: users who used least lately go first; backfill off"
    )


def test_removing_a_vc_that_jobs_name_is_refused_before_the_click(page, login, shijue):
    login("root")
    page.goto("/cluster/vcs/shijue/")
    page.click("[data-vc-remove]")
    expect(page.locator("[data-remove-refused]")).to_contain_text("2 jobs name VC shijue")
    expect(page.locator("[data-remove-jobs]")).to_have_text("Its 2 running or waiting jobs")
    expect(page.locator("[data-confirm-remove]")).to_have_count(0)


def test_removing_a_vc_no_job_names_asks_first(page, login, kong):
    login("root")
    page.goto("/cluster/vcs/kong/")
    page.click("[data-vc-remove]")
    page.click("[data-confirm-remove]")
    expect(page.locator(".messages")).to_contain_text("VC kong was removed.")
    expect(page.locator('[data-vc-row="kong"]')).to_have_count(0)
    assert not VirtualCluster.objects.filter(name="kong").exists()


def test_a_user_gets_the_portals_403_page_and_no_vcs_link(page, login, shijue):
    login("alice")
    expect(page.locator("[data-nav-vcs]")).to_have_count(0)
    page.goto("/cluster/vcs/shijue/")
    expect(page.locator('[data-error-page="403"]')).to_contain_text("The VC pages are for cluster admins.")
    expect(page.locator(".topbar")).to_be_visible()


PAGES = ("/cluster/vcs/", "/cluster/vcs/shijue/", "/cluster/vcs/shijue/edit/", "/cluster/vcs/shijue/remove/")


@pytest.mark.parametrize("language", ["en", "zh-hans"])
def test_it_reads_at_1280_px(page, login, shijue, language):
    login("root")
    page.goto("/cluster/vcs/")
    in_language(page, language)
    title, jobs = HEADINGS[language]
    expect(page.locator("h1")).to_have_text(title)
    for path in PAGES:
        page.goto(path)
        assert page_has_no_sideways_scroll(page), path
    page.goto("/cluster/vcs/shijue/")
    expect(page.locator("[data-vc-jobs] h2")).to_have_text(jobs)


@pytest.mark.parametrize("language", ["en", "zh-hans"])
def test_it_fits_a_phone_with_44_px_targets(phone, login, shijue, language):
    login("root", on=phone)
    phone.goto("/cluster/vcs/")
    in_language(phone, language)
    for path in PAGES:
        phone.goto(path)
        phone.wait_for_load_state("networkidle")
        assert phone.evaluate(WIDER_THAN_SCREEN_JS)["width"] <= 390, path
        assert phone.evaluate(SMALL_TARGETS_JS, TAP) == [], path


def test_no_vc_page_shows_english_in_chinese(chinese, login, shijue):
    """Their refusals too: a share over 100 %, an unknown user, a removal refused."""
    page = chinese
    login("root", on=page)
    walk = EnglishWalk(page)
    walk.visit(*PAGES, "/cluster/new-vc/", "/cluster/")
    page.goto("/cluster/vcs/shijue/edit/")
    page.fill("#id_share_percent", "90")
    page.fill("#id_allowed_users", "alice, meiyou")
    page.click("[data-vc-save]")
    expect(page.locator('[data-field-error="share_percent"]')).to_be_visible()
    walk.check("a refused form")
    walk.assert_none()
