"""The terminal page in a real browser, through daphne, into a task's real sshd."""

import re

import pytest

from tests.ssh.websocket import session_cookie

pytestmark = [pytest.mark.browser, pytest.mark.docker, pytest.mark.django_db(transaction=True)]

BUFFER_JS = """() => {
  const buffer = window.paiTerminal.buffer.active;
  const lines = [];
  for (let i = 0; i < buffer.length; i++) lines.push(buffer.getLine(i).translateToString(true));
  return lines.join("\\n");
}"""
SIZE_JS = "() => [window.paiTerminal.rows, window.paiTerminal.cols]"


def stty_sizes(text):
    return [tuple(map(int, m)) for m in re.findall(r"^(\d+) (\d+)$", text, re.MULTILINE)]


def wait_for_buffer(page, predicate, timeout_ms=15000):
    page.wait_for_function(f"() => ({predicate})(({BUFFER_JS})())", timeout=timeout_ms)
    return page.evaluate(BUFFER_JS)


def test_it_runs_commands_and_follows_window_resizes(
    make_job, user, ssh_containers, docker_node, asgi_live_server, chromium
):
    job = make_job()
    container = ssh_containers.start(job, "worker", 0)
    ssh_containers.record_running(job, "worker", 0, container, docker_node)
    cookie_name, cookie_value = session_cookie(user).split("=", 1)

    with chromium() as browser:
        check_terminal(browser, asgi_live_server.url, job, cookie_name, cookie_value, container)


def check_terminal(browser, base_url, job, cookie_name, cookie_value, container):
    context = browser.new_context(viewport={"width": 1200, "height": 800})
    context.add_cookies([{"name": cookie_name, "value": cookie_value, "url": base_url}])
    page = context.new_page()
    page.goto(f"{base_url}/jobs/{job.full_name}/terminal/worker/0/")
    wait_for_buffer(page, "text => /# ?$/m.test(text)")  # the root prompt

    page.locator(".xterm-helper-textarea").focus()
    page.keyboard.type("echo h''i; stty size\n")
    text = wait_for_buffer(page, "text => /^\\d+ \\d+$/m.test(text)")
    rows, cols = page.evaluate(SIZE_JS)
    assert re.search(r"^hi$", text, re.MULTILINE)
    assert stty_sizes(text) == [(rows, cols)]

    page.set_viewport_size({"width": 700, "height": 450})
    page.wait_for_function(f"() => window.paiTerminal.cols < {cols} && window.paiTerminal.rows < {rows}")
    page.keyboard.type("clear; stty size\n")
    new_rows, new_cols = page.evaluate(SIZE_JS)
    text = wait_for_buffer(page, f"text => text.includes('{new_rows} {new_cols}')")
    assert (new_rows, new_cols) in stty_sizes(text)
    assert (new_rows, new_cols) != (rows, cols)

    container.kill()  # the connection drops: the terminal says so and offers to reconnect
    text = wait_for_buffer(page, "text => text.includes('alice~ssh-demo/worker-0')")
    page.wait_for_selector("#terminal-reconnect:not([hidden])")
    assert page.locator("#terminal-status").inner_text() == "Disconnected"
    context.close()


def test_it_says_the_task_ended_when_it_ends(
    make_job, user, ssh_containers, docker_node, asgi_live_server, chromium, monkeypatch
):
    """Issue 36: the status stayed "Connected" after the task ended."""
    from jobs.models import TaskState

    monkeypatch.setenv("DJANGO_ALLOW_ASYNC_UNSAFE", "true")  # the row is written beside Playwright's loop

    job = make_job()
    container = ssh_containers.start(job, "worker", 0)
    task = ssh_containers.record_running(job, "worker", 0, container, docker_node)
    cookie_name, cookie_value = session_cookie(user).split("=", 1)
    with chromium() as browser:
        context = browser.new_context(viewport={"width": 1200, "height": 800})
        context.add_cookies([{"name": cookie_name, "value": cookie_value, "url": asgi_live_server.url}])
        page = context.new_page()
        page.goto(f"{asgi_live_server.url}/jobs/{job.full_name}/terminal/worker/0/")
        wait_for_buffer(page, "text => /# ?$/m.test(text)")
        assert page.locator("#terminal-status").inner_text() == "Connected"
        task.state = TaskState.SUCCEEDED
        task.save(update_fields=["state"])
        page.wait_for_function("() => document.getElementById('terminal-status').textContent.includes('task ended')")
        assert page.locator("#terminal-status").inner_text() == "Disconnected: the task ended"
        context.close()
