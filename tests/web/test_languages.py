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
