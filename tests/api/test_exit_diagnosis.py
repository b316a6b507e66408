"""A real task that fails with a known traceback ends with OpenPAI's code, its phrase and what to
change, on the job page and in the API (appExitSpec, appExitMessages.runtime) — process executor,
real scheduler loop."""

import base64
import json
import shutil

import pytest
from django.utils import translation

from jobs.models import Job, JobState
from tests.conftest import require
from tests.exitspec.samples import NCCL_TIMEOUT
from tests.factories import password_for, v2_yaml

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]

CUDA_OOM = json.dumps(
    "python3 -c \"raise RuntimeError('CUDA out of memory. Tried to allocate 1.53 GiB (GPU 0; 79.15 GiB total "
    "capacity; 76.40 GiB already allocated; 1.12 GiB free; 77.50 GiB reserved in total by PyTorch)')\""
)
MISSING_MODULE = json.dumps("python3 -c 'import timm_for_the_test'")
NCCL = json.dumps(f"echo {base64.b64encode(NCCL_TIMEOUT.encode()).decode()} | base64 -d >&2; kill -ABRT $$")


def failed(submit_yaml, run_until, name, command, extra=""):
    response = submit_yaml(v2_yaml(name, command, extra=extra + "jobRetryCount: 1\n"))
    assert response.status_code == 202, response.content
    return run_until(Job.objects.get(name=name), JobState.FAILED, JobState.SUCCEEDED)


def page_of(client, job):
    client.login(username="alice", password=password_for("alice"))
    return client.get(f"/jobs/{job.full_name}/").content.decode()


def test_it_explains_a_cuda_oom_with_226_and_offers_half_the_batch(
    default_vc, submit_yaml, alice, process_node, run_until, client
):
    job = failed(submit_yaml, run_until, "oom", CUDA_OOM, extra="parameters:\n  batch_size: 64\n")
    status = alice.get(f"/api/v2/jobs/{job.full_name}").json()["jobStatus"]
    page = page_of(client, job)

    assert (job.exit_code, job.user_exit_code, job.retries_used) == (226, 1, 0)  # permanent: not retried
    assert status["appExitSpec"]["phrase"] == "ContainerCudaOOMKilled"
    runtime = status["appExitMessages"]["runtime"]
    assert runtime["matchedUserLogString"].startswith("RuntimeError: CUDA out of memory. Tried to allocate")
    assert "make the batch smaller" in runtime["solution"] and runtime["originalUserExitCode"] == 1
    assert "ContainerCudaOOMKilled" in page and "make the batch smaller" in page
    assert "Resubmit with batch_size = 32" in page
    response = client.post(f"/jobs/{job.full_name}/resubmit-fix/")
    clone = Job.objects.exclude(pk=job.pk).get(owner=job.owner)
    assert response["Location"] == f"/jobs/{clone.full_name}/"
    assert clone.normalized["parameters"]["batch_size"] == 32


def test_it_explains_a_missing_module_with_232_and_the_module(
    default_vc, submit_yaml, alice, process_node, run_until, client
):
    job = failed(submit_yaml, run_until, "imports", MISSING_MODULE)
    status = alice.get(f"/api/v2/jobs/{job.full_name}").json()["jobStatus"]
    page = page_of(client, job)

    assert (job.exit_code, job.retries_used) == (232, 0)
    assert status["appExitSpec"]["phrase"] == "ContainerImportError"
    assert "pip install timm_for_the_test" in status["appExitMessages"]["runtime"]["solution"]
    assert "ModuleNotFoundError: No module named" in job.exit_diagnostics
    assert "ContainerImportError" in page and "pip install timm_for_the_test" in page


def test_it_explains_jupyter_on_an_image_without_it_with_220_and_the_notebook_image(
    default_vc, submit_yaml, alice, process_node, run_until, client, settings
):
    require(shutil.which("jupyter") is None, "a box without Jupyter (the process executor runs on it)")
    plugin = "extras:\n  com.microsoft.pai.runtimeplugin:\n    - plugin: jupyter\n"
    job = failed(submit_yaml, run_until, "notebook", json.dumps("sleep 60"), extra=plugin)
    status = alice.get(f"/api/v2/jobs/{job.full_name}").json()["jobStatus"]

    assert (job.exit_code, job.retries_used) == (220, 0)
    assert status["appExitMessages"]["runtime"]["matchedPattern"] == "jupyter-missing"
    assert settings.PAI_NOTEBOOK_IMAGE in status["appExitMessages"]["runtime"]["solution"]
    assert "The image has no Jupyter" in page_of(client, job)


def test_it_explains_an_nccl_timeout_with_134_and_retries_it(
    default_vc, submit_yaml, alice, process_node, run_until, client
):
    job = failed(submit_yaml, run_until, "nccl", NCCL)
    status = alice.get(f"/api/v2/jobs/{job.full_name}").json()["jobStatus"]
    page = page_of(client, job)

    assert (job.exit_code, job.retries_used) == (134, 1)  # unknown: retried up to the count
    assert status["appExitSpec"]["phrase"] == "ContainerSigAbrtReceived"
    assert status["appExitMessages"]["runtime"]["matchedPattern"] == "nccl-timeout"
    assert "NCCL_SOCKET_IFNAME" in status["appExitMessages"]["runtime"]["solution"]
    assert "ContainerSigAbrtReceived" in page and "collective operation (NCCL) timed out" in page


@pytest.fixture
def back_to_english():
    """The test client leaves the request's language active in the test's thread: a later test in
    this worker would read English texts in Chinese."""
    yield
    translation.deactivate()


def test_the_chinese_page_translates_the_diagnosis_and_the_fix_around_the_log_line(
    default_vc, submit_yaml, process_node, run_until, client, back_to_english
):
    job = failed(submit_yaml, run_until, "imports-zh", MISSING_MODULE)
    client.login(username="alice", password=password_for("alice"))
    page = client.get(f"/jobs/{job.full_name}/", HTTP_ACCEPT_LANGUAGE="zh-hans").content.decode()

    assert "程序导入模块失败" in page
    # The log's own words, said once, beside the fix (issue 50: the diagnosis printed them too)
    assert page.count("ModuleNotFoundError: No module named") == 1
    assert "data-fix-line>ModuleNotFoundError: No module named" in page
    assert "镜像中没有安装 Python 模块 timm_for_the_test" in page
