"""The Submit page's Tools and Data sections, masked secrets, Other settings and profile SSH keys,
in Chromium (issue 36); Jupyter ticked on the default image switches to the notebook image (issue 50)."""

from __future__ import annotations

import re

import asyncssh
import pytest
import yaml
from playwright.sync_api import expect

from jobs.models import Job
from jobs.ssh import authorized_keys_for
from tests.browser.pages import page_has_no_sideways_scroll, submit_button
from tests.factories import default_image

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

IMPORTED = f"""protocolVersion: 2
name: imported
type: job
prerequisites:
  - {{name: img, type: dockerimage, uri: {default_image()}}}
parameters:
  steps: 100
  lr: 0.001
secrets:
  token: s3cr3t-value
taskRoles:
  trainer:
    instances: 1
    dockerImage: img
    resourcePerInstance: {{cpu: 1, memoryMB: 256, gpu: 0}}
    commands: [echo <% $secrets.token %> <% $parameters.steps %>]
extras:
  jobStatusChangeNotification: {{failed: true}}
  com.microsoft.pai.runtimeplugin:
    - plugin: ssh
      parameters: {{jobssh: true, sshbarrier: true}}
"""


def open_in_form(page, tmp_path):
    config = tmp_path / "imported.yaml"
    config.write_text(IMPORTED)
    page.goto("/submit/?mode=file")
    page.set_input_files("#id_config_file", str(config))
    page.click('[data-mode-panel="file"] button[value="to_form"]')
    expect(page.locator('[data-mode-panel="form"]')).to_be_visible()


def test_an_imported_secret_is_masked_until_shown(page, login, user, tmp_path):
    login()
    open_in_form(page, tmp_path)
    value = page.locator('input[name="secret_value"]').first
    expect(value).to_have_attribute("type", "password")
    expect(value).to_have_value("s3cr3t-value")
    assert "s3cr3t-value" not in page.locator("body").inner_text()
    value.locator("xpath=..").get_by_role("button", name="Show").click()
    expect(value).to_have_attribute("type", "text")
    assert "s3cr3t-value" not in page.locator('input[name="base_config"]').get_attribute("value")


def test_settings_without_a_field_are_shown_and_kept_through_form_yaml_and_back(page, login, user, tmp_path):
    login()
    open_in_form(page, tmp_path)
    other = page.locator("[data-other-settings-yaml]")
    expect(other).to_contain_text("jobStatusChangeNotification")
    expect(other).to_contain_text("sshbarrier: true")
    expect(page.locator("#id_parameters")).to_have_value("steps=100\nlr=0.001")
    page.check("#id_tensorboard")
    page.select_option("#id_priority", "prod")
    page.uncheck("#id_jobssh")
    page.click('[data-mode-panel="form"] button[value="to_yaml"]')
    config = yaml.safe_load(page.locator("#id_config_text").input_value())
    assert config["parameters"] == {"steps": 100, "lr": 0.001}
    assert config["secrets"] == {"token": "s3cr3t-value"}
    assert config["extras"]["jobStatusChangeNotification"] == {"failed": True}
    assert config["extras"]["hivedScheduler"] == {"jobPriorityClass": "prod"}
    plugins = {p["plugin"]: p.get("parameters") for p in config["extras"]["com.microsoft.pai.runtimeplugin"]}
    assert plugins["ssh"] == {"jobssh": False, "sshbarrier": True}
    assert plugins["tensorboard"] == {"logdir": {"path": "/mnt/tensorboard"}}
    page.click('[data-mode-panel="text"] button[value="to_form"]')
    expect(page.locator("#id_tensorboard")).to_be_checked()
    expect(page.locator("#id_jobssh")).not_to_be_checked()
    expect(page.locator("#id_priority")).to_have_value("prod")
    submit_button(page, "form").click()
    page.wait_for_url("**/jobs/alice~imported/")
    spec = Job.objects.get(name="imported").spec
    assert spec["parameters"] == {"steps": 100, "lr": 0.001}
    assert spec["extras"]["jobStatusChangeNotification"] == {"failed": True}
    assert "s3cr3t-value" not in page.content()


def test_a_new_secret_row_is_added_and_submitted(page, login, user):
    login()
    page.goto("/submit/")
    page.click("[data-add-secret]")
    names = page.locator('input[name="secret_name"]')
    values = page.locator('input[name="secret_value"]')
    expect(names).to_have_count(2)  # the fresh form's blank row and the added one
    names.nth(0).fill("token")
    values.nth(0).fill("abc")
    names.nth(1).fill("pin")
    values.nth(1).fill("0042")
    expect(values.nth(1)).to_have_attribute("type", "password")
    page.fill("#id_name", "with-secrets")
    submit_button(page, "form").click()
    page.wait_for_url("**/jobs/alice~with-secrets/")
    assert Job.objects.get(name="with-secrets").config_text.count("******") == 2


def test_ticking_jupyter_on_the_default_image_switches_to_the_notebook_image(page, login, user, settings):
    login()
    page.goto("/submit/")
    page.check("#id_jupyter")
    expect(page.locator("#id_image")).to_have_value(settings.PAI_NOTEBOOK_IMAGE)
    expect(page.locator("[data-jupyter-image]")).to_contain_text(f"{default_image()} has no Jupyter")
    page.uncheck("#id_jupyter")
    expect(page.locator("#id_image")).to_have_value(default_image())
    expect(page.locator("[data-jupyter-image]")).to_be_hidden()


def test_a_profile_ssh_key_is_added_listed_and_counted_on_the_submit_page(page, login, user):
    key = asyncssh.generate_private_key("ssh-ed25519", comment="me@laptop").export_public_key("openssh").decode()
    login()
    page.goto("/profile/")
    page.fill("#ssh-key-text", "not a key")
    page.get_by_role("button", name="Add SSH key").click()
    expect(page.locator("#ssh-key-text")).to_have_attribute("aria-invalid", "true")
    page.fill("#ssh-key-text", key)
    page.get_by_role("button", name="Add SSH key").click()
    expect(page.locator("[data-ssh-key-row]")).to_have_count(1)
    expect(page.locator("[data-ssh-key-row]")).to_contain_text("me@laptop")
    page.goto("/submit/")
    expect(page.locator("[data-tools]")).to_contain_text(re.compile(r"your 1 profile SSH key\b"))


def test_the_submit_page_with_tools_fits_a_phone(phone, login, user):
    login(on=phone)
    phone.goto("/submit/")
    expect(phone.locator("[data-tools]")).to_be_visible()
    assert page_has_no_sideways_scroll(phone)


def test_a_key_pair_made_in_the_browser_opens_the_job_and_never_reaches_the_server(page, login, user, tmp_path):
    login()
    page.goto("/submit/")
    page.click("[data-generate-key]")
    link = page.locator("[data-private-key-link]")
    expect(link).to_be_visible()
    public_line = page.locator("#id_ssh_keys").input_value()
    assert public_line.startswith("ssh-ed25519 AAAA")
    with page.expect_download() as download:
        link.click()
    saved = tmp_path / "id_ed25519_pai"
    download.value.save_as(saved)
    private = asyncssh.import_private_key(saved.read_text())
    assert private.export_public_key("openssh").decode().split()[:2] == public_line.split()[:2]
    page.fill("#id_name", "own-key")
    submit_button(page, "form").click()
    page.wait_for_url("**/jobs/alice~own-key/")
    job = Job.objects.get(name="own-key")
    assert public_line.split()[1] in authorized_keys_for(job)
    assert "PRIVATE KEY" not in job.config_text
