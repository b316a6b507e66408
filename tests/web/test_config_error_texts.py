"""Every page that shows a config, template or storage error renders it by its code in the reader's
language (issue 45): the submit page (form fields, pasted text's lines), the template page, the
storage page, the job page's class change and restart. No English sentence is parsed back."""

from __future__ import annotations

import html
from collections.abc import Iterator

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client
from django.urls import reverse
from django.utils import translation

from jobs.models import JobState
from jobs.storage import areas
from tests.web.conftest import v2_config
from tests.web.test_submit_page import form_post

pytestmark = pytest.mark.django_db
CHINESE = {"HTTP_ACCEPT_LANGUAGE": "zh-hans"}


@pytest.fixture(autouse=True)
def back_to_english() -> Iterator[None]:
    """The test client leaves the request's language active in the test's thread."""
    yield
    translation.deactivate()


def shown_messages(client: Client, response) -> str:
    """The page the post went back to, as its reader sees the text."""
    return html.unescape(client.get(response["Location"], HTTP_ACCEPT_LANGUAGE="zh-hans").content.decode())


def test_a_form_field_shows_its_error_in_chinese(alice_client):
    response = alice_client.post("/submit/", form_post(**{"roles-0-memory_mb": "10"}), **CHINESE)
    assert response.context["roles"][0]["errors"]["memory_mb"] == ["必须 ≥ 100"]


def test_a_taken_name_is_said_in_chinese_beside_the_name_field(alice_client):
    alice_client.post("/submit/", form_post())
    response = alice_client.post("/submit/", form_post(), **CHINESE)
    assert response.context["job_errors"]["name"] == ['用户 alice 已有作业 "from-form"']


def test_a_pasted_configs_syntax_error_is_said_in_chinese_at_its_line(alice_client):
    response = alice_client.post("/submit/", {"mode": "text", "config_text": "a: [1, 2\nb: 3\n"}, **CHINESE)
    [error] = response.context["line_errors"]
    assert error.line == 2
    assert error.message == (
        "YAML 语法错误，第 2 行第 2 列：没有找到应有的 ',' 或 ']'（解析方括号列表 [...] 时，从第 1 行第 4 列开始）"  # noqa: RUF001
    )


def test_a_templates_config_error_is_said_in_chinese(alice_client):
    text = v2_config("t").replace("memoryMB: 1024", "memoryMB: 10")
    data = {"name": "t", "summary": "", "description": "", "visibility": "private", "config_text": text}
    response = alice_client.post(reverse("templates:new"), data, **CHINESE)
    assert response.status_code == 400
    assert response.context["errors"]["config"] == ["taskRoles.worker.resourcePerInstance.memoryMB: 必须 ≥ 100"]


def test_the_storage_page_says_its_refusal_in_chinese(alice_client, user, settings, tmp_path):
    settings.PAI_FS_ROOT = tmp_path / "fs"
    areas.user_area(user.username)
    files = {"action": "upload", "path": "../bob", "files": [SimpleUploadedFile("x.txt", b"x")]}
    response = alice_client.post(reverse("storage:browse"), files, **CHINESE)
    assert "../bob：路径中不允许使用 '..'" in shown_messages(alice_client, response)  # noqa: RUF001


def test_a_refused_class_change_is_said_in_chinese(alice_client, user, make_job):
    job = make_job(user, "waiting")
    response = alice_client.post(reverse("jobs:priority", args=[job.full_name]), {"priority_class": "gold"}, **CHINESE)
    assert "未知的优先级类别 'gold'" in shown_messages(alice_client, response)


def test_a_restart_the_vc_no_longer_allows_says_why_on_the_job_page(alice_client, user, make_job, default_vc):
    job = make_job(user, "ended", state=JobState.FAILED)
    default_vc.allowed_users.add(user.__class__.objects.create_user("carol"))
    response = alice_client.post(reverse("jobs:restart", args=[job.full_name]), **CHINESE)
    assert response.status_code == 302
    assert 'alice 已不能再向虚拟集群 "default" 提交作业' in shown_messages(alice_client, response)
