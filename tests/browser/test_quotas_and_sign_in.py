"""Issue 36 in Chromium: the sign-in page's language switch and where signing in lands; a VC
whose share is no CPU warned of on the cluster page; jobs that can never fit listed apart on
the dashboard. Issue 50: shares over 100 % refused by the admin's VC form, said on the cluster page."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

from catalogue import Message
from clusters.models import Node, VirtualCluster
from clusters.texts import counted_gpus
from tests.factories import create_job, normalized_spec, password_for

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def sign_in(page, username: str = "alice") -> None:
    page.fill("#id_username", username)
    page.fill("#id_password", password_for(username))
    page.click("button[type=submit]")


def test_it_switches_the_sign_in_page_to_chinese_and_lands_on_next(page, user):
    page.goto("/submit/")
    expect(page).to_have_url(re.compile(r"/login/\?next=/submit/$"))
    page.select_option("#language-select", "zh-hans")
    expect(page.locator("h1")).to_have_text("登录 PAI Portal")
    expect(page).to_have_url(re.compile(r"/login/\?next=/submit/$"))
    sign_in(page)
    page.wait_for_url("**/submit/")
    expect(page.locator("h1")).to_have_text("提交作业")


def test_it_lands_home_after_signing_in_from_the_sign_in_page(page, user):
    page.goto("/login/")
    page.select_option("#language-select", "zh-hans")
    expect(page.locator("h1")).to_have_text("登录 PAI Portal")
    sign_in(page)
    page.wait_for_url(lambda url: "/login/" not in url and "/i18n/" not in url)
    expect(page.locator("#id_username")).to_have_count(0)


@pytest.fixture
def two_cpus(default_vc) -> Node:
    return Node.objects.create(name="small", address="10.0.0.8", cpus=2, memory_mb=4096)


def test_it_warns_on_the_cluster_page_of_a_vc_whose_share_is_no_cpu(page, login, user, two_cpus, default_vc):
    VirtualCluster.objects.filter(name="default").update(share_percent=34)
    VirtualCluster.objects.create(name="b", share_percent=33)
    VirtualCluster.objects.create(name="c", share_percent=33)
    login("alice")
    page.goto("/cluster/")
    expect(page.locator("[data-share-warning]")).to_have_text(
        "The share of VC c (33%) gives it none of the cluster's 2 CPUs: its jobs asking for them can never run. "
        "Raise its share (and lower another's) or add nodes."
    )


def test_it_shows_60_and_40_percent_of_two_cpus_as_one_cpu_each(page, login, user, two_cpus, default_vc):
    VirtualCluster.objects.filter(name="default").update(share_percent=60)
    VirtualCluster.objects.create(name="research", share_percent=40)
    login("alice")
    page.goto("/cluster/")
    rows = page.locator("table.data").first.locator("tbody tr")
    expect(rows.nth(0)).to_contain_text("0 / 1")
    expect(rows.nth(1)).to_contain_text("research")
    expect(rows.nth(1)).to_contain_text("0 / 1")
    expect(page.locator("[data-share-warning]")).to_have_count(0)


def test_the_admin_vc_form_refuses_shares_over_100_percent(page, login, admin_user, default_vc):
    login("root")
    page.goto("/admin/clusters/virtualcluster/add/")
    page.fill("#id_name", "research")
    page.fill("#id_share_percent", "40")
    page.click("input[name=_save]")
    expect(page.locator(".errorlist")).to_contain_text("the VCs' shares would add up to 140% (more than 100%)")
    assert not VirtualCluster.objects.filter(name="research").exists()


def test_it_says_on_the_cluster_page_when_shares_add_up_to_over_100_percent(page, login, user, two_cpus):
    VirtualCluster.objects.create(name="research", share_percent=40)  # (as `createvc` allows, warning)
    login("alice")
    page.goto("/cluster/")
    expect(page.locator("[data-share-warning]").first).to_contain_text(
        "The VCs' shares add up to 140%, more than the whole cluster"
    )


def test_it_counts_one_of_a_thing_in_the_singular_in_english_and_chinese(page, login, user, default_vc):
    """Issue 50: "1 CPUs" on the cluster page and "needs 1 GPUs on one node" for a job."""
    Node.objects.create(name="tiny", address="10.0.0.9", cpus=1, memory_mb=2048)
    waiting = [
        Message.of("reason.largest_free.gpu", gpus=counted_gpus(1), most=0)
    ]  # (as placement says it: tests/placement)
    job = create_job(user, "one-gpu", pending_reason=waiting)
    login("alice")
    page.goto("/cluster/")
    expect(page.locator("[data-cluster-totals]")).to_have_text("0 GPUs, 1 CPU, 2048 MB memory on schedulable nodes")
    page.goto(f"/jobs/{job.full_name}/")
    expect(page.locator("main")).to_contain_text("needs 1 GPU on one node; largest free: 0")
    page.select_option("#language-select", "zh-hans")
    expect(page.locator("main")).to_contain_text("需要在一个节点上有 1 块 GPU")
    page.goto("/cluster/")
    expect(page.locator("[data-cluster-totals]")).to_have_text("可调度节点共有 0 块 GPU、1 个 CPU、2048 MB 内存")


def test_it_lists_jobs_that_can_never_fit_apart_on_the_dashboard(page, login, two_cpus, user):
    huge = normalized_spec("huge", {"worker": 1})
    huge["taskRoles"]["worker"]["resourcePerInstance"]["cpu"] = 64
    create_job(user, "huge", spec=huge)
    create_job(user, "fits", pending_reason='VC "default" quota: 2 of 2 CPUs used, job needs 1')
    login("alice")
    page.goto("/dashboard/")
    expect(page.locator("[data-dashboard-waiting] tbody tr")).to_have_count(1)
    expect(page.locator("[data-dashboard-waiting]")).to_contain_text("alice~fits")
    expect(page.locator("[data-dashboard-never-fit]")).to_contain_text("alice~huge")
    expect(page.locator("[data-dashboard-never-fit]")).to_contain_text(
        'VC "default" quota is 2 CPUs in all, job needs 64 (it can never fit)'
    )
