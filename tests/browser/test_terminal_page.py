"""The web terminal's page in Chromium without a task behind it (issue 36): what it draws at a
device pixel ratio of 1, and its copy and paste keys. The session itself: tests/ssh/."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from tests.browser.screen_pixels import lit_pixels
from tests.factories import create_job, password_for

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

WRITE_JS = "text => new Promise(done => { window.paiTerminal.reset(); window.paiTerminal.write(text, done); })"


@pytest.fixture
def terminal(browser, live_server, user) -> Iterator[Any]:
    """The terminal page of a RUNNING task at 1x, clipboard allowed (no sshd: the socket is refused)."""
    job = create_job(user, "underscores", state="RUNNING")
    context = browser.new_context(
        base_url=live_server.url, viewport={"width": 1000, "height": 600}, device_scale_factor=1, locale="en-US"
    )
    context.grant_permissions(["clipboard-read", "clipboard-write"])
    page = context.new_page()
    page.goto("/login/")
    page.fill("#id_username", user.username)
    page.fill("#id_password", password_for(user.username))
    page.click("button[type=submit]")
    page.wait_for_url("**/")
    page.goto(f"/jobs/{job.full_name}/terminal/worker/0/")
    page.wait_for_function("() => window.paiTerminal !== undefined")
    yield page
    context.close()


def drawn(page: Any, text: str) -> int:
    page.evaluate(WRITE_JS, text)
    page.wait_for_timeout(100)  # the renderer draws on the next frame
    return lit_pixels(page.locator(".xterm-screen").screenshot())


def test_it_draws_underscores_at_a_device_pixel_ratio_of_1(terminal):
    with_underscores = drawn(terminal, "my_dataset__v2")
    with_spaces = drawn(terminal, "my dataset  v2")
    # Three underscores of a 14 px font: each several pixels wide (it was 324 and 324).
    assert with_underscores - with_spaces >= 3 * 5


def test_it_copies_the_selection_with_ctrl_shift_c(terminal):
    terminal.evaluate(WRITE_JS, "my_dataset__v2")
    terminal.evaluate("() => window.paiTerminal.selectAll()")
    terminal.evaluate("() => window.addEventListener('keydown', e => { window.keptFromBrowser = e.defaultPrevented; })")
    terminal.locator(".xterm-helper-textarea").focus()
    terminal.keyboard.press("Control+Shift+C")
    terminal.wait_for_function("() => navigator.clipboard.readText().then(t => t.includes('my_dataset__v2'))")
    assert terminal.evaluate("() => window.keptFromBrowser")  # Chrome's DevTools picker does not open


def test_it_pastes_with_ctrl_shift_v(terminal):
    terminal.evaluate("() => { window.typed = []; window.paiTerminal.onData(d => window.typed.push(d)); }")
    terminal.evaluate("() => navigator.clipboard.writeText('ls /mnt/data_v2')")
    terminal.locator(".xterm-helper-textarea").focus()
    terminal.keyboard.press("Control+Shift+V")
    terminal.wait_for_function("() => window.typed.join('').includes('ls /mnt/data_v2')")
    assert "\x16" not in terminal.evaluate("() => window.typed.join('')")  # not a literal ^V
