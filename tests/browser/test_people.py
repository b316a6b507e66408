"""The People pages in Chromium: an admin finds a user and puts them in a group (the group's VC
follows), makes a group, and registers users from a CSV file, on a desktop and on a phone; a
non-admin gets the portal's 403 page, in their language (issue 50)."""

import pytest
from playwright.sync_api import expect

from clusters.grants import create_group
from clusters.models import VirtualCluster

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def ml(admin_user):
    VirtualCluster.objects.create(name="ml")
    return create_group(admin_user, "ml", description="Machine learning", vcs=["ml"])


def test_an_admin_finds_a_user_and_gives_them_a_groups_vc(page, login, admin_user, user, ml):
    login("root")
    page.goto("/people/")
    page.fill("[data-user-search] input[name=q]", "ali")
    page.click("[data-user-search] button")
    page.click('[data-user-row="alice"] a')
    page.check(f'[data-choices="groups"] input[value="{ml.pk}"]')
    page.click("[data-user-form] button[type=submit]")
    expect(page.locator("[data-saved]")).to_be_visible()
    page.goto("/people/?q=alice")
    expect(page.locator('[data-user-row="alice"]')).to_contain_text("ml")
    page.goto("/people/audit/")
    expect(page.locator("[data-audit-row]").first).to_contain_text("user.groups")


def test_an_admin_registers_users_from_a_csv_file_on_a_phone(phone, login, admin_user, ml, tmp_path):
    csv = tmp_path / "userinfo.csv"
    csv.write_text(
        "username,password,email,admin,virtual cluster,groups\n"
        'student1,Tall-Horse-42,s1@example.org,false,"ml",ml\n'
        "student2,Tall-Horse-43,s2@example.org,false,,\n"
    )
    login("root", on=phone)
    phone.goto("/people/import/")
    phone.set_input_files("#csv-file", str(csv))
    phone.click("[data-import-form] button[type=submit]")
    expect(phone.locator("[data-import-done]")).to_contain_text("student1, student2")
    assert phone.evaluate("document.documentElement.scrollWidth") <= 390


def test_a_bad_csv_row_is_shown_with_its_row_and_column(page, login, admin_user, ml, tmp_path):
    login("root")
    page.goto("/people/import/")
    page.fill(
        "#csv-text", "username,password,email,admin,virtual cluster,groups\nstudent1,Tall-Horse-42,,false,nope,\n"
    )
    page.click("[data-import-form] button[type=submit]")
    expect(page.locator('[data-import-error="2"]')).to_contain_text("no such VC: nope")


def test_it_keeps_a_refused_imports_text_in_the_box_but_not_in_the_page(page, login, admin_user, ml):
    pasted = "username,password,email,admin,virtual cluster,groups\nstudent1,Tall-Horse-42,,false,nope,\n"
    login("root")
    page.goto("/people/import/")
    page.fill("#csv-text", pasted)
    page.click("[data-import-form] button[type=submit]")
    expect(page.locator("[data-import-errors]")).to_be_visible()
    expect(page.locator("#csv-text")).to_have_value(pasted)
    # The page's HTML (a textarea's value set by its script is not in it) never holds a password.
    assert "Tall-Horse-42" not in page.content()


def test_a_non_admin_gets_the_portals_403_page_in_chinese(page, login, user):
    login("alice")
    page.goto("/people/")
    expect(page.locator("[data-error-page='403'] h1")).to_have_text("Not allowed")
    expect(page.locator("main")).to_contain_text("The People pages are for cluster admins.")
    page.select_option("#language-select", "zh-hans")
    expect(page.locator("[data-error-page='403'] h1")).to_have_text("不允许")
    expect(page.locator("main")).to_contain_text("“用户与组”页面仅供集群管理员使用。")
    expect(page.locator("a.whoami")).to_have_text("alice")  # the portal's top bar
