"""Job templates in real Chromium (issue 34): a job's config saved as a template from its page,
found by a search, and a job started from it with a parameter changed (the form filled in)."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from jobs.actions import submit_job
from tests.factories import v2_yaml

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_a_jobs_config_is_saved_as_a_template_and_a_job_started_from_it(page, login, user):
    job = submit_job(user, v2_yaml("train", "echo lr=<% $parameters.lr %>", extra="parameters: {lr: 0.1}\n"))
    login()
    page.goto(f"/jobs/{job.full_name}/")
    page.click("[data-save-template]")
    page.fill("[data-template-form] input[name=name]", "lr baseline")
    page.fill("[data-template-form] input[name=summary]", "one training run")
    page.click("[data-template-form] button[type=submit]")
    expect(page.locator(".messages")).to_contain_text("Template lr baseline saved.")

    page.goto("/templates/?q=baseline")
    expect(page.locator("[data-template]")).to_have_count(1)
    page.click("[data-template] h2 a")
    page.fill("[data-template-start] input[name='p.lr']", "0.02")
    page.click("[data-template-start] button[type=submit]")
    expect(page.locator("#id_parameters")).to_have_value("lr=0.02")
    expect(page.locator("#id_name")).to_have_value("train-2")
    page.click('[data-mode-panel="form"] button[value="submit"]')
    page.wait_for_url("**/jobs/alice~train-2/")
