"""Jupyter for real: started from the Submit form on a Docker node (Debian's Notebook in
pai-portal/notebook), opened through the proxy in Chromium, a cell run over the kernel's websocket;
refused to another user and to an anonymous browser; its pages cannot read the portal's cookies.
And an idle notebook stopped, saying why."""

from __future__ import annotations

import subprocess
import time
from datetime import timedelta
from pathlib import Path
from urllib.parse import urlsplit

import pytest
from django.utils import timezone
from playwright.sync_api import expect

from jobs.actions import submit_job
from jobs.models import InteractiveApp, Job, JobState
from scheduling.app_watch import watch_apps
from tests.ssh.websocket import session_cookie

pytestmark = [pytest.mark.docker, pytest.mark.slow, pytest.mark.django_db(transaction=True)]

ROOT = Path(__file__).resolve().parents[2]
IMAGE = "pai-portal/notebook:latest"
# The notebook the job writes into its work dir: one cell that prints the job's name.
NOTEBOOK = (
    '{"cells": [{"cell_type": "code", "execution_count": null, "metadata": {}, "outputs": [], '
    '"source": ["import os\\n", "print(\\"job:\\", os.environ[\\"PAI_JOB_NAME\\"])"]}], '
    '"metadata": {"kernelspec": {"display_name": "Python 3", "language": "python", "name": "python3"}}, '
    '"nbformat": 4, "nbformat_minor": 5}'
)


@pytest.fixture(scope="module")
def notebook_image(docker_engine):
    """Built from Debian's packages when absent (make image-notebook), as CI does."""
    subprocess.run(["bash", str(ROOT / "scripts" / "build-base-image.sh"), "notebook"], check=True, cwd=ROOT)
    return IMAGE


def _until_ready(job: Job, timeout: float = 90) -> InteractiveApp:
    app = job.apps.get()
    deadline = time.monotonic() + timeout
    while app.ready_at is None:
        assert time.monotonic() < deadline, Path(job.tasks.get().log_path).read_text()
        watch_apps()
        app.refresh_from_db()
        time.sleep(0.5)
    return app


@pytest.mark.browser
def test_a_notebook_started_from_the_form_runs_a_cell_through_the_proxy_for_its_owner_only(
    user,
    other_user,
    default_vc,
    docker_node,
    run_until,
    notebook_image,
    asgi_live_server,
    chromium,
    settings,
    monkeypatch,
):
    # (Playwright's sync API runs an event loop in this thread, where the scheduler's passes run too.)
    monkeypatch.setenv("DJANGO_ALLOW_ASYNC_UNSAFE", "true")
    settings.PAI_PUBLIC_URL = base = asgi_live_server.url
    alice = session_cookie(user).split("=", 1)
    bob = session_cookie(other_user).split("=", 1)
    with chromium() as browser:
        context = browser.new_context(viewport={"width": 1280, "height": 900}, locale="en-US")
        context.set_default_timeout(20_000)
        context.add_cookies([{"name": alice[0], "value": alice[1], "url": base}])
        page = context.new_page()
        page.goto(f"{base}/submit/")
        page.fill("#id_name", "notebook")
        page.fill("#id_image", notebook_image)
        page.fill("#roles-0-memory_mb", "1024")
        page.fill("#roles-0-command", f"echo '{NOTEBOOK}' > check.ipynb\nsleep infinity")
        page.check("#id_jupyter")
        page.locator('[data-mode-panel="form"] button[value="submit"]').click()
        expect(page.locator("[data-job-state]")).to_be_visible()

        job = run_until(Job.objects.get(name="notebook"), JobState.RUNNING, timeout=90)
        app = _until_ready(job)
        page.reload()
        with context.expect_page() as opened:
            page.locator('[data-app-open="jupyter"]').click()
        notebook = opened.value
        # Notebook's file list, signed in (its page stays hidden until its scripts load: slow under load).
        expect(notebook.locator('#notebook_list a[href$="check.ipynb"]')).to_be_visible(timeout=60_000)
        assert urlsplit(notebook.url).hostname == f"{app.slug}.apps.localhost"

        notebook.goto(f"http://{urlsplit(notebook.url).netloc}/notebooks/check.ipynb")
        expect(notebook.locator("#kernel_indicator_icon.kernel_idle_icon")).to_be_attached(timeout=60_000)
        notebook.locator(".cell .input_area").first.click()
        notebook.keyboard.press("Shift+Enter")
        expect(notebook.locator(".output_area pre").first).to_contain_text("job: ", timeout=30_000)
        printed = notebook.locator(".output_area pre").first.inner_text()
        assert printed.strip() == f"job: {job.spec['name']}" or job.full_name in printed

        # Neither the portal's cookies nor the proxy's own are readable by the notebook's pages.
        seen = notebook.evaluate("document.cookie")
        assert "sessionid" not in seen and "csrftoken" not in seen and "pai-app-session" not in seen
        assert any(c["name"] == "sessionid" for c in context.cookies(base))
        app_url = f"http://{urlsplit(notebook.url).netloc}/tree"
        context.close()

        # Bob, signed in to the portal, is refused; an anonymous browser is sent to sign in.
        other = browser.new_context(locale="en-US")
        other.add_cookies([{"name": bob[0], "value": bob[1], "url": base}])
        refused = other.new_page()
        answer = refused.goto(app_url)
        assert answer is not None and answer.status == 403
        expect(refused.locator("[data-app-refused]")).to_be_visible()
        other.close()
        anonymous = browser.new_context(locale="en-US").new_page()
        anonymous.goto(app_url)
        assert urlsplit(anonymous.url).path == "/login/"
        assert "notebook_list" not in anonymous.content()


def test_an_idle_notebook_is_stopped_with_its_reason_on_the_job_page(
    user, default_vc, docker_node, run_until, notebook_image
):
    from django.test import Client

    plugin = (
        "extras:\n  com.microsoft.pai.runtimeplugin:\n    - plugin: jupyter\n      parameters: {idleMinutes: 0.1}\n"
    )
    text = v2_notebook("idle", plugin)
    job = run_until(submit_job(user, text), JobState.RUNNING, timeout=90)
    app = _until_ready(job)
    assert app.idle_seconds == 6
    deadline = time.monotonic() + 60
    while Job.objects.get(pk=job.pk).execution_type != "STOP":
        assert time.monotonic() < deadline, "never stopped"
        watch_apps()
        time.sleep(1)
    assert app.ready_at is not None and timezone.now() - app.ready_at >= timedelta(seconds=6)
    job = run_until(job, JobState.STOPPED, timeout=60)
    assert job.exit_diagnostics.endswith("stopped because jupyter was idle for 0.1 minutes.")
    browser = Client()
    browser.force_login(user)
    page = browser.get(f"/jobs/{job.full_name}/").content.decode()
    assert "Stopped because jupyter was idle for 0.1 minutes." in page


def v2_notebook(name: str, extra: str) -> str:
    return f"""protocolVersion: 2
name: {name}
type: job
prerequisites:
  - {{name: img, type: dockerimage, uri: {IMAGE}}}
taskRoles:
  main:
    instances: 1
    dockerImage: img
    resourcePerInstance: {{cpu: 1, memoryMB: 1024, gpu: 0}}
    commands: [sleep infinity]
{extra}"""
