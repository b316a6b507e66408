"""The portal in a real browser: submit in three modes, Edit YAML, export/import, errors in place,
live states, stop, clone, Chinese, and another user's 404. Screenshots go to test-artifacts/."""

from __future__ import annotations

import re
import time

import pytest
from playwright.sync_api import expect

from jobs.actions import submit_job
from jobs.models import Job
from tests.factories import default_image, v2_yaml
from tests.web.conftest import v2_config

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


LIVE_CONFIG = v2_yaml(
    "live",
    "echo epoch 1 loss 0.93",
    "sleep 3",
    "echo training done",
    role="trainer",
    memory_mb=1024,
    ports="{tensorboard: 1}",
)


def fill_form(page, name: str, instances: str = "1", memory: str = "256") -> None:
    page.goto("/submit/")
    page.fill("#id_name", name)
    page.fill("#id_image", default_image())
    page.fill("#roles-0-name", "worker")
    page.fill("#roles-0-instances", instances)
    page.fill("#roles-0-memory_mb", memory)
    page.fill("#roles-0-command", "echo hello")


def submit_button(page, panel: str):
    return page.locator(f'[data-mode-panel="{panel}"] button[value="submit"]')


def set_state(job: Job, state: str) -> None:
    Job.objects.filter(pk=job.pk).update(state=state)


def test_it_submits_with_the_form_and_lists_the_job(page, login, user, screenshot):
    login()
    fill_form(page, "via-form")
    page.click("[data-add-role]")
    page.fill("#roles-1-name", "ps")
    page.fill("#roles-1-memory_mb", "256")
    page.fill("#roles-1-command", "sleep 1")
    screenshot("submit-form")
    submit_button(page, "form").click()
    page.wait_for_url("**/jobs/alice~via-form/")
    expect(page.locator(".task-table tbody tr")).to_have_count(2)
    page.goto("/")
    expect(page.get_by_role("link", name="via-form")).to_be_visible()


def test_it_submits_pasted_yaml_and_lists_the_job(page, login, user):
    login()
    page.goto("/submit/")
    page.click('[data-mode-tab="text"]')
    page.fill("#id_config_text", v2_config("via-paste"))
    submit_button(page, "text").click()
    page.wait_for_url("**/jobs/alice~via-paste/")
    page.goto("/")
    expect(page.get_by_role("link", name="via-paste")).to_be_visible()


def test_it_submits_an_imported_file_and_lists_the_job(page, login, user, tmp_path):
    login()
    config = tmp_path / "job.yaml"
    config.write_text(v2_config("via-file"))
    page.goto("/submit/")
    page.click('[data-mode-tab="file"]')
    page.set_input_files("#id_config_file", str(config))
    submit_button(page, "file").click()
    page.wait_for_url("**/jobs/alice~via-file/")
    page.goto("/")
    expect(page.get_by_role("link", name="via-file")).to_be_visible()


def test_it_carries_a_yaml_edit_back_into_the_form(page, login, user):
    login()
    fill_form(page, "round-trip", instances="2")
    page.click('button[value="to_yaml"]')
    text = page.locator("#id_config_text")
    expect(text).to_have_value(re.compile(r"instances: 2"))
    text.fill(text.input_value().replace("instances: 2", "instances: 7"))
    page.click('button[value="to_form"]')
    expect(page.locator("#roles-0-instances")).to_have_value("7")
    expect(page.locator("#id_name")).to_have_value("round-trip")


def test_it_exports_a_config_and_imports_it_again(page, login, user, tmp_path):
    login()
    fill_form(page, "exported", instances="3")
    with page.expect_download() as download_info:
        page.click('[data-mode-panel="form"] button[value="export"]')
    exported = tmp_path / "exported.yaml"
    download_info.value.save_as(exported)
    assert "instances: 3" in exported.read_text()
    page.goto("/submit/")
    page.click('[data-mode-tab="file"]')
    page.set_input_files("#id_config_file", str(exported))
    submit_button(page, "file").click()
    page.wait_for_url("**/jobs/alice~exported/")
    expect(page.locator(".task-table tbody tr")).to_have_count(3)


def test_it_shows_a_form_error_beside_the_field_and_keeps_the_input(page, login, user):
    login()
    fill_form(page, "bad-form", memory="10")
    submit_button(page, "form").click()
    field = page.locator("#roles-0-memory_mb")
    expect(field).to_have_attribute("aria-invalid", "true")
    expect(field.locator("xpath=..").locator(".field-error")).to_be_visible()
    expect(field).to_have_value("10")
    expect(page.locator("#roles-0-command")).to_have_value("echo hello")


def test_it_marks_the_line_of_a_pasted_config_error_and_keeps_the_text(page, login, user):
    login()
    text = v2_config("bad-paste").replace("memoryMB: 1024", "memoryMB: 10")
    page.goto("/submit/")
    page.click('[data-mode-tab="text"]')
    page.fill("#id_config_text", text)
    submit_button(page, "text").click()
    line = next(number for number, content in enumerate(text.splitlines(), 1) if "memoryMB" in content)
    expect(page.locator(".gutter .has-error")).to_have_text(str(line))
    expect(page.locator(".line-errors")).to_contain_text("memoryMB")
    expect(page.locator("#id_config_text")).to_have_value(text)


def test_it_shows_an_imported_files_error_in_the_text_box(page, login, user, tmp_path):
    login()
    config = tmp_path / "bad.yaml"
    config.write_text(v2_config("bad-file").replace("instances: 1", "instances: 0"))
    page.goto("/submit/")
    page.click('[data-mode-tab="file"]')
    page.set_input_files("#id_config_file", str(config))
    submit_button(page, "file").click()
    expect(page.locator(".line-errors")).to_contain_text("instances")
    expect(page.locator("#id_config_text")).to_have_value(config.read_text())


def run_scheduler_until(loop, job: Job, state: str, timeout: float = 20.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        loop.run_once()
        job.refresh_from_db()
        if job.state == state:
            return
        time.sleep(0.1)
    raise AssertionError(f"job stayed {job.state}, wanted {state}; reason: {job.pending_reason!r}")


def test_it_follows_a_job_from_waiting_to_succeeded_without_reloading(
    page, login, user, process_node, scheduler, screenshot
):
    job = submit_job(user, LIVE_CONFIG)
    login()
    page.goto(f"/jobs/{job.full_name}/")
    page.evaluate("window.notReloaded = true")
    state = page.locator("[data-job-state]")
    expect(state).to_have_text("Waiting")
    run_scheduler_until(scheduler, job, "RUNNING")
    expect(state).to_have_text("Running")
    expect(page.locator(".task-table")).to_contain_text("local")
    expect(page.locator("pre.log")).to_contain_text("epoch 1")
    screenshot("job-detail")
    run_scheduler_until(scheduler, job, "SUCCEEDED")
    expect(state).to_have_text("Succeeded")
    expect(page.locator("pre.log")).to_contain_text("training done")
    assert page.evaluate("window.notReloaded") is True


def test_the_list_updates_states_and_counts_without_reloading(page, login, user, screenshot):
    jobs = [submit_job(user, v2_config(f"resnet-{number}")) for number in range(4)]
    for job, state in zip(jobs[1:], ("SUCCEEDED", "FAILED", "RUNNING"), strict=True):
        set_state(job, state)
    login()
    page.evaluate("window.notReloaded = true")
    badge = page.locator(f'tr[data-job-id="{jobs[0].pk}"] [data-state]')
    expect(badge).to_have_text("Waiting")
    set_state(jobs[0], "RUNNING")
    expect(badge).to_have_text("Running")
    expect(page.locator(f'tr[data-job-id="{jobs[0].pk}"] td.expected-start')).to_have_text("")
    expect(page.locator('[data-count-state="RUNNING"] .count-value')).to_have_text("2")
    assert page.evaluate("window.notReloaded") is True
    screenshot("job-list")


def test_it_stops_a_running_job_after_confirmation(page, login, user, process_node, scheduler):
    job = submit_job(user, LIVE_CONFIG.replace("sleep 3", "sleep 60"))
    run_scheduler_until(scheduler, job, "RUNNING")
    login()
    page.goto(f"/jobs/{job.full_name}/")
    page.click("[data-stop-link]")
    expect(page.locator("h1")).to_have_text("Stop job")
    page.click("button.danger")
    page.wait_for_url(f"**/jobs/{job.full_name}/")
    expect(page.locator(".messages")).to_contain_text("Stop requested")
    run_scheduler_until(scheduler, job, "STOPPED")
    expect(page.locator("[data-job-state]")).to_have_text("Stopped")
    expect(page.locator("[data-stop-link]")).to_have_count(0)


def test_it_clones_a_job_into_the_form(page, login, user):
    job = submit_job(user, v2_config("original"))
    login()
    page.goto(f"/jobs/{job.full_name}/")
    page.get_by_role("link", name="Clone").click()
    expect(page.locator("#id_name")).to_have_value("original-clone")
    expect(page.locator("#roles-0-name")).to_have_value("worker")
    expect(page.locator('input[name="secret_name"]').first).to_have_value("token")
    expect(page.locator('input[name="secret_value"]').first).to_have_value("")
    page.locator('input[name="secret_value"]').first.fill("new-secret")
    submit_button(page, "form").click()
    page.wait_for_url("**/jobs/alice~original-clone/")


def test_it_switches_to_chinese(page, login, user):
    login()
    page.goto("/submit/")
    page.select_option("#language-select", "zh-hans")
    page.wait_for_load_state()
    expect(page.locator("h1")).to_have_text("提交作业")
    expect(page.locator('[data-mode-tab="file"]')).to_have_text("导入文件")


@pytest.mark.usefixtures("private_job_list")
def test_another_user_gets_404_on_someone_elses_job_when_the_list_is_private(page, login, user, other_user):
    job = submit_job(user, v2_config("private"))
    login("bob")
    response = page.goto(f"/jobs/{job.full_name}/")
    assert response.status == 404


def test_another_user_sees_a_read_only_summary_of_someone_elses_job(page, login, user, other_user):
    job = submit_job(user, v2_config("shared"))
    login("bob")
    response = page.goto(f"/jobs/{job.full_name}/")
    assert response.status == 200
    expect(page.locator("[data-read-only]")).to_be_visible()
    expect(page.locator("[data-stop-link]")).to_have_count(0)
    expect(page.locator("pre[data-log-url]")).to_have_count(0)
