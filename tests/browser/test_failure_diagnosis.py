"""Issue 36 in Chromium: a task that dies of a CUDA out of memory shows OpenPAI's code, its phrase,
the log line and what to change, and its resubmit shows the changed config lines (a diff) and asks
before submitting with half the batch size (issue 50), the log's line said once above the log (issue
50: the diagnosis and the fix both printed it); a malformed image is refused on the submit page
beside the image field."""

from __future__ import annotations

import json

import pytest
from playwright.sync_api import expect

from jobs.actions import submit_job
from jobs.models import Job
from tests.browser.pages import submit_button
from tests.factories import v2_yaml

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

CUDA_OOM = json.dumps(
    "python3 -c \"raise RuntimeError('CUDA out of memory. Tried to allocate 1.53 GiB (GPU 0; 79.15 GiB total "
    "capacity; 76.40 GiB already allocated; 1.12 GiB free; 77.50 GiB reserved in total by PyTorch)')\""
)


@pytest.fixture
def cuda_oom(user, process_node, run_until) -> Job:
    config = v2_yaml("cuda-oom", CUDA_OOM, extra="parameters:\n  batch_size: 64\n")
    return run_until(submit_job(user, config), "FAILED", "SUCCEEDED")


def test_a_cuda_oom_says_what_to_change_and_resubmits_with_half_the_batch(page, login, cuda_oom):
    job = cuda_oom
    login()
    page.goto(f"/jobs/{job.full_name}/")

    expect(page.locator("code.phrase").first).to_have_text("ContainerCudaOOMKilled")
    fix = page.locator("[data-job-fix]")
    expect(fix.locator("[data-fix-line]")).to_contain_text("RuntimeError: CUDA out of memory. Tried to allocate")
    expect(fix.locator("[data-fix-text]")).to_contain_text("make the batch smaller")
    fix.locator("[data-resubmit-fix]", has_text="Resubmit with batch_size = 32").click()
    expect(page.locator("[data-diff-removed]")).to_contain_text(["batch_size: 64"])
    expect(page.locator("[data-diff-added]")).to_contain_text(["cuda-oom-batchsize32", "batch_size: 32"])
    assert Job.objects.count() == 1
    page.click("[data-resubmit-confirm]")

    page.wait_for_url("**/jobs/alice~cuda-oom-batchsize32/")
    assert Job.objects.get(name="cuda-oom-batchsize32").normalized["parameters"]["batch_size"] == 32


def test_the_failures_log_line_is_said_once_above_the_log(page, login, cuda_oom):
    login()
    page.goto(f"/jobs/{cuda_oom.full_name}/")
    expect(page.locator("[data-fix-line]")).to_contain_text("RuntimeError: CUDA out of memory")
    why = "ContainerCudaOOMKilled: The program ran out of GPU memory"
    expect(page.locator("[data-diagnosis]")).to_contain_text(why)
    expect(page.locator("#attempts")).to_contain_text(why)
    assert page.locator("#job-live").inner_text().count("Tried to allocate 1.53 GiB") == 1


def test_a_malformed_image_is_refused_beside_the_image_field(page, login, user):
    login()
    page.goto("/submit/")
    page.fill("#id_image", "PyTorch/pytorch:2.1 cuda12")
    submit_button(page, "form").click()

    expect(page.locator("#id_image")).to_have_attribute("aria-invalid", "true")
    error = page.locator("#id_image").locator("xpath=..").locator(".field-error")
    expect(error).to_contain_text("is not a valid image reference: has a space in it")
    expect(error).to_contain_text("repository names are lowercase (e.g. pytorch/pytorch)")
    assert not Job.objects.exists()
