"""Playwright + Debian's Chromium against a live server (never a downloaded browser).

Playwright's sync API runs an event loop in the test thread; Django would then refuse database
calls there (SynchronousOnlyOperation), hence DJANGO_ALLOW_ASYNC_UNSAFE for these tests.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.browser.screenshots import keep_if_changed
from tests.conftest import CHROMIUM, launched_chromium, require
from tests.factories import password_for
from tests.scheduler.conftest import process_node, run_until, scheduler  # noqa: F401  (fixtures)

os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = "true"

ROOT = Path(__file__).resolve().parents[2]
ARTIFACTS = ROOT / "test-artifacts"
DOC_SCREENSHOTS = ROOT / "docs" / "screenshots"


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    require(Path(CHROMIUM).exists(), "Debian chromium (apt-get install chromium)")
    from playwright.sync_api import expect

    # A shared 2-CPU CI box is slow at times: wait up to 10 s for what a page should show.
    expect.set_options(timeout=10_000)
    with launched_chromium() as chromium:
        yield chromium


@pytest.fixture
def page(browser, live_server) -> Iterator[Any]:
    context = browser.new_context(base_url=live_server.url, viewport={"width": 1280, "height": 900}, locale="en-US")
    context.set_default_timeout(10_000)
    page = context.new_page()
    yield page
    context.close()


PHONE = {"width": 390, "height": 844}


@pytest.fixture
def phone(browser, live_server) -> Iterator[Any]:
    """A page the size of a phone's screen, with a phone's touch and pixel density."""
    context = browser.new_context(
        base_url=live_server.url, viewport=PHONE, device_scale_factor=2, is_mobile=True, has_touch=True, locale="en-US"
    )
    context.set_default_timeout(10_000)
    yield context.new_page()
    context.close()


@pytest.fixture
def chinese(settings, browser, live_server):
    """The portal set to Chinese, in a browser that asks for Chinese."""
    settings.LANGUAGE_CODE = "zh-hans"
    context = browser.new_context(base_url=live_server.url, viewport={"width": 1280, "height": 900}, locale="zh-CN")
    context.set_default_timeout(10_000)
    yield context.new_page()
    context.close()


@pytest.fixture
def login(page) -> Callable[..., Any]:
    def sign_in(username: str = "alice", on: Any = None) -> Any:
        target = on or page
        target.goto("/login/")
        target.fill("#id_username", username)
        target.fill("#id_password", password_for(username))
        target.click("button[type=submit]")
        target.wait_for_url("**/")
        return target

    return sign_in


@pytest.fixture
def screenshot(browser, page) -> Callable[..., None]:
    """Full-page screenshot into test-artifacts/, and into docs/screenshots/ (the docs link those)
    when it changed meaningfully (tests/browser/screenshots.py)."""

    def take(name: str, of: Any = None) -> None:
        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        picture = (of or page).screenshot(path=str(ARTIFACTS / f"{name}.png"), full_page=True)
        keep_if_changed(browser, picture, DOC_SCREENSHOTS / f"{name}.png")

    return take


@pytest.fixture(autouse=True)
def default_virtual_cluster(transactional_db, default_vc) -> Any:
    """Transactional tests flush the tables after each test, data migrations included."""
    return default_vc
