"""Issue 36, item 2: a malformed image reference is refused at submit, naming the field and why, in
the API, on the page and by the CLI (it used to be accepted, then fail at run time as an unknown
failure, retried)."""

from __future__ import annotations

import io

import pytest
from django.core.management import call_command
from django.utils import translation

from jobs.models import Job
from tests.api.conftest import bearer_client
from tests.factories import v2_yaml
from tests.web.test_submit_page import form_post

BAD = "PyTorch/pytorch:2.1 cuda12"

pytestmark = pytest.mark.django_db


def test_the_api_refuses_it_naming_the_field(user, default_vc):
    response = bearer_client(user).post(
        "/api/v2/jobs", data=v2_yaml("bad-image", image=f"'{BAD}'"), content_type="text/yaml"
    )
    assert response.status_code == 400
    body = response.json()
    fields = {error["field"]: error["message"] for error in body["errors"]}
    assert body["code"] and "prerequisites[0].uri" in body["message"]
    assert "is not a valid image reference: has a space" in fields["prerequisites[0].uri"]
    assert not Job.objects.exists()


def test_the_page_shows_it_beside_the_image_field(alice_client, default_vc):
    response = alice_client.post("/submit/", form_post(image=BAD))
    assert response.status_code == 400
    [message] = response.context["job_errors"]["image"]
    assert "not a valid image reference: has a space" in message
    assert not Job.objects.exists()


def test_the_cli_prints_it_and_exits_1(user, default_vc, tmp_path):
    path = tmp_path / "job.yaml"
    path.write_text(v2_yaml("bad-image", image=f"'{BAD}'"))
    err = io.StringIO()
    with pytest.raises(SystemExit) as exit_:
        call_command("submitjob", str(path), "--user", user.username, stdout=io.StringIO(), stderr=err)
    assert exit_.value.code == 1
    assert err.getvalue().startswith(
        "prerequisites[0].uri: 'PyTorch/pytorch:2.1 cuda12' is not a valid image reference"
    )


@pytest.fixture
def back_to_english():
    """The test client leaves the request's language active in the test's thread: a later test in
    this worker would read English texts in Chinese."""
    yield
    translation.deactivate()


def test_the_chinese_page_gives_both_reasons_in_chinese(alice_client, default_vc, back_to_english):
    response = alice_client.post("/submit/", form_post(image=BAD), HTTP_ACCEPT_LANGUAGE="zh-hans")
    [message] = response.context["job_errors"]["image"]
    assert message.startswith("'PyTorch/pytorch:2.1 cuda12' 不是有效的镜像引用：含有空格")  # noqa: RUF001
    assert "仓库名必须是小写（例如 pytorch/pytorch）" in message  # noqa: RUF001
