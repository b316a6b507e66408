"""The Submit page as a researcher uses it every day (issue 18): a fresh form that runs as it is,
round trips that change nothing, references and secrets kept honest, input never silently
changed, and a job that can never fit said so at once."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

from jobs.actions import submit_job
from jobs.models import Job
from tests.browser.pages import exit_codes, job_named, submit_button
from tests.factories import v2_yaml

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

# ps ends at once; the worker would run for a minute. With the v2 default (minSucceededInstances:
# all of the role's instances) ps succeeding ends the job and stops the worker (-220).
PS_AND_WORKER = """protocolVersion: 2
name: {name}
type: job
prerequisites:
  - {{name: image, type: dockerimage, uri: pai-portal/base:latest}}
taskRoles:
  ps:
    dockerImage: image
    resourcePerInstance: {{cpu: 1, memoryMB: 256, gpu: 0}}
    commands: [echo ps done]
  worker:
    dockerImage: image
    resourcePerInstance: {{cpu: 1, memoryMB: 256, gpu: 0}}
    commands: [sleep 60]
"""
STEPS = v2_yaml("steps", "seq <% $parameters.steps %>", extra="parameters:\n  steps: 3\n")
WITH_SECRET = v2_yaml("secretive", "echo <% $secrets.token %>", extra="secrets:\n  token: s3cr3t\n")


def test_a_fresh_form_submits_as_it_is_and_the_job_succeeds(page, login, user, process_node, run_until):
    login()
    page.goto("/submit/")
    expect(page.locator("#id_name")).to_have_value(re.compile(r"^alice_[0-9a-f]{8}$"))
    submit_button(page, "form").click()
    page.wait_for_url(re.compile(r"/jobs/alice~alice_[0-9a-f]{8}/$"))
    job = run_until(Job.objects.get(owner=user), "SUCCEEDED", "FAILED")
    assert job.state == "SUCCEEDED"
    expect(page.locator("pre.log")).to_contain_text("hello")


def test_a_config_opened_in_the_form_runs_like_the_same_config_imported(
    page, login, user, process_node, run_until, tmp_path
):
    direct = run_until(submit_job(user, PS_AND_WORKER.format(name="direct")), "SUCCEEDED", "FAILED")
    config = tmp_path / "via-form.yaml"
    config.write_text(PS_AND_WORKER.format(name="via-form"))
    login()
    page.goto("/submit/?mode=file")
    page.set_input_files("#id_config_file", str(config))
    page.click('[data-mode-panel="file"] button[value="to_form"]')
    expect(page.locator('[data-mode-panel="form"]')).to_be_visible()
    expect(page.locator("#roles-1-min_succeeded")).to_have_value("")
    submit_button(page, "form").click()
    page.wait_for_url("**/jobs/alice~via-form/")
    via_form = run_until(job_named("via-form"), "SUCCEEDED", "FAILED")
    assert exit_codes(via_form) == exit_codes(direct) == {"ps-0": 0, "worker-0": -220}


def test_edit_yaml_shows_the_yaml_on_a_mode_form_address(page, login, user):
    login()
    page.goto("/submit/?mode=form")
    page.click('[data-mode-panel="form"] button[value="to_yaml"]')
    expect(page.locator('[data-mode-panel="text"]')).to_be_visible()
    expect(page.locator("#id_config_text")).to_have_value(re.compile(r"echo hello"))


def test_a_clone_keeps_parameter_references_so_a_new_value_is_used(page, login, user):
    job = submit_job(user, STEPS)
    login()
    page.goto(f"/jobs/{job.full_name}/")
    page.get_by_role("link", name="Clone").click()
    expect(page.locator("#roles-0-command")).to_have_value("seq <% $parameters.steps %>")
    page.fill("#id_parameters", "steps=5")
    submit_button(page, "form").click()
    page.wait_for_url("**/jobs/alice~steps-clone/")
    assert job_named("steps-clone").spec["taskRoles"]["worker"]["commands"] == ["seq 5"]


def test_an_export_keeps_parameter_references(page, login, user, tmp_path):
    job = submit_job(user, STEPS)
    login()
    page.goto(f"/jobs/{job.full_name}/")
    with page.expect_download() as download:
        page.get_by_role("link", name="Export config").click()
    exported = tmp_path / "steps.yaml"
    download.value.save_as(exported)
    assert "seq <% $parameters.steps %>" in exported.read_text()


def test_a_clone_with_its_secret_left_empty_is_refused_naming_the_secret(page, login, user):
    job = submit_job(user, WITH_SECRET)
    login()
    page.goto(f"/submit/?clone={job.full_name}")
    expect(page.locator('input[name="secret_name"]').first).to_have_value("token")
    expect(page.locator('input[name="secret_value"]').first).to_have_value("")
    submit_button(page, "form").click()
    expect(page.locator("#id_secrets")).to_have_attribute("aria-invalid", "true")
    expect(page.locator("#id_secrets").locator(".field-error")).to_contain_text("'token'")
    assert not Job.objects.filter(name="secretive-clone").exists()


def test_a_reimported_export_with_a_masked_secret_is_refused_at_its_line(page, login, user, tmp_path):
    job = submit_job(user, WITH_SECRET)
    login()
    page.goto(f"/jobs/{job.full_name}/")
    with page.expect_download() as download:
        page.get_by_role("link", name="Export config").click()
    exported = tmp_path / "secretive.yaml"
    download.value.save_as(exported)
    exported.write_text(exported.read_text().replace("name: secretive", "name: reimported"))
    page.goto("/submit/?mode=file")
    page.set_input_files("#id_config_file", str(exported))
    submit_button(page, "file").click()
    expect(page.locator(".line-errors")).to_contain_text("secrets.token")
    expect(page.locator(".line-errors")).to_contain_text("******")
    assert not Job.objects.filter(name="reimported").exists()


def test_it_reports_input_the_form_cannot_read_beside_each_field_and_focuses_the_first(page, login, user):
    login()
    page.goto("/submit/")
    page.fill("#id_parameters", "steps 100")
    page.fill("#roles-0-instances", "0")
    page.fill("#roles-0-ports", "http")
    submit_button(page, "form").click()
    for field, text in (("#id_parameters", "Line 1"), ("#roles-0-instances", ">= 1"), ("#roles-0-ports", "http:1")):
        expect(page.locator(field)).to_have_attribute("aria-invalid", "true")
        expect(page.locator(field).locator("xpath=..").locator(".field-error")).to_contain_text(text)
    expect(page.locator("#roles-0-instances")).to_have_value("0")
    expect(page.locator("[data-error-summary] li")).to_have_count(3)
    expect(page.locator("#id_parameters")).to_be_focused()


def test_it_explains_a_bad_name_in_words_not_a_regex(page, login, user):
    login()
    page.goto("/submit/")
    page.fill("#id_name", "my job!")
    submit_button(page, "form").click()
    error = page.locator("#id_name").locator("xpath=..").locator(".field-error")
    expect(error).to_contain_text("may contain only letters, digits, _ and -")
    expect(error).not_to_contain_text("^")


def test_it_jumps_to_a_field_from_the_error_summary(page, login, user):
    login()
    page.goto("/submit/")
    page.fill("#id_name", "")
    page.fill("#roles-0-memory_mb", "10")
    submit_button(page, "form").click()
    page.locator("[data-error-summary] a", has_text="Memory (MB)").click()
    expect(page.locator("#roles-0-memory_mb")).to_be_focused()


def test_it_warns_at_submit_about_a_job_that_can_never_fit(page, login, user, process_node):
    login()
    page.goto("/submit/")
    page.fill("#roles-0-cpu", "64")
    submit_button(page, "form").click()
    page.wait_for_url(re.compile(r"/jobs/alice~"))
    expect(page.locator(".message-warning")).to_contain_text("can never run on the cluster")
    expect(page.locator(".message-warning")).to_contain_text("job needs 64")
