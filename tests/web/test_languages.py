"""English and Simplified Chinese, with the switcher in the top bar."""

import pytest

pytestmark = pytest.mark.django_db


def test_it_serves_the_submit_page_in_chinese_after_switching(alice_client):
    response = alice_client.post("/i18n/setlang/", {"language": "zh-hans", "next": "/submit/"})
    assert response["Location"] == "/submit/"
    page = alice_client.get("/submit/").content.decode()
    assert "提交作业" in page
    assert "导入文件" in page
    assert "添加任务角色" in page


def test_it_translates_job_states_in_the_list(alice_client, user, make_job):
    make_job(user, "job", state="RUNNING")
    page = alice_client.get("/", HTTP_ACCEPT_LANGUAGE="zh-hans").content.decode()
    assert "运行中" in page


def test_it_offers_both_languages_in_the_switcher(alice_client):
    page = alice_client.get("/").content.decode()
    assert 'value="en"' in page
    assert 'value="zh-hans"' in page


def test_it_switches_the_sign_in_page_to_chinese_before_signing_in(client):
    response = client.post("/i18n/setlang/", {"language": "zh-hans", "next": "/login/?next=/submit/"})
    assert (response.status_code, response["Location"]) == (302, "/login/?next=/submit/")
    assert response.cookies["django_language"].value == "zh-hans"
    assert "登录" in client.get("/login/?next=/submit/").content.decode()


def test_it_lands_on_next_after_signing_in(client, user):
    from tests.factories import password_for

    response = client.post("/login/", {"username": "alice", "password": password_for("alice"), "next": "/submit/"})
    assert response["Location"] == "/submit/"


def test_it_never_lands_on_the_sign_in_page_or_the_language_switch_after_signing_in(client, user):
    from tests.factories import password_for

    for stale in ("/login/", "/login/?next=/", "/i18n/setlang/"):
        response = client.post("/login/", {"username": "alice", "password": password_for("alice"), "next": stale})
        assert response["Location"] == "/start/", stale
        client.logout()
