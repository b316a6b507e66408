"""A signed-in user's browser against pages that jobs serve: the portal's cookies never reach a
task's port, and a page on another port of the portal's own host cannot open the user's terminal."""

from __future__ import annotations

import json
import shlex
import socket
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
from playwright.sync_api import expect

from jobs.actions import stop_job, submit_job
from jobs.models import Job
from tests.browser.test_portal import run_scheduler_until
from tests.scheduler.conftest import role, v2_job

pytestmark = pytest.mark.browser

# The task answers every request with the Cookie header it received.
COOKIE_ECHO = """
import http.server, os
port = int(os.environ["PAI_CONTAINER_HOST_http_PORT_LIST"].split(",")[0])
class Echo(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        body = ("cookies sent to the task: %s" % self.headers.get("Cookie")).encode()
        self.send_response(200)
        self.send_header("Content-Type", "text/plain")
        self.end_headers()
        self.wfile.write(body)
http.server.HTTPServer(("", port), Echo).serve_forever()
"""


def serving_job() -> str:
    role = {
        "server": {
            "instances": 1,
            "dockerImage": "image",
            "resourcePerInstance": {"cpu": 1, "memoryMB": 256, "gpu": 0, "ports": {"http": 1}},
            "commands": [f"python3 -c {shlex.quote(COOKIE_ECHO)}"],
        }
    }
    return v2_job("serves-a-page", "".join(f"  {line}\n" for line in json.dumps(role, indent=1).splitlines()))


def wait_until_listening(host: str, port: int, timeout: float = 20.0) -> None:
    """Until an HTTP request there is answered (on a process node pasta accepts a task's declared
    port at once, and closes the connection while nothing listens inside yet)."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            with socket.create_connection((host, port), timeout=2) as connection:
                connection.sendall(b"GET / HTTP/1.0\r\n\r\n")
                if connection.recv(1):
                    return
        except OSError:
            pass
        assert time.monotonic() < deadline, f"nothing answers on {host}:{port}"
        time.sleep(0.1)


@pytest.fixture
def local_node(process_node):
    """This machine's node as `addnode --local` registers it: tasks' ports on 127.0.0.2."""
    process_node.address = "127.0.0.2"
    process_node.save()
    return process_node


@pytest.fixture
def running_server_job(user, local_node, scheduler) -> Iterator[Job]:
    job = submit_job(user, serving_job())
    run_scheduler_until(scheduler, job, "RUNNING")
    yield job
    stop_job(job, by=user)
    run_scheduler_until(scheduler, job, "STOPPED")


def test_a_task_page_opened_from_the_portal_gets_no_portal_cookie(page, login, running_server_job):
    login()
    assert {cookie["name"] for cookie in page.context.cookies()} >= {"sessionid", "csrftoken"}
    page.goto(f"/jobs/{running_server_job.full_name}/")
    port = running_server_job.tasks.get().ports["http"][0]
    expect(page.locator("[data-task-port]", has_text=f"127.0.0.2:{port}")).to_be_visible()
    wait_until_listening("127.0.0.2", port)
    page.goto(f"http://127.0.0.2:{port}/")
    assert page.locator("body").inner_text() == "cookies sent to the task: None"


# -- a page on another port of the portal's host tries the user's terminal websocket ---------------

OPEN_TERMINAL_JS = """url => new Promise(done => {
  const socket = new WebSocket(url);
  socket.onopen = () => { socket.close(); done("opened"); };
  socket.onerror = () => done("refused");
})"""


@pytest.fixture
def page_on_another_port() -> Iterator[str]:
    """An empty page served on 127.0.0.1 (the portal's host) at another port, as a task could."""

    class Blank(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            self.send_response(200)
            self.send_header("Content-Type", "text/html")
            self.end_headers()
            self.wfile.write(b"<!doctype html><title>a job's page</title>")

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Blank)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}/"
    server.shutdown()


def test_a_websocket_from_another_port_of_the_portals_host_is_refused(
    browser, asgi_live_server, user, page_on_another_port
):
    job = submit_job(user, v2_job("terminal-target", role("worker", "sleep 60")))
    context = browser.new_context()
    page = context.new_page()
    page.goto(f"{asgi_live_server.url}/login/")
    page.fill("#id_username", "alice")
    page.fill("#id_password", "alice-password-1")
    page.click("button[type=submit]")
    page.wait_for_url("**/")
    socket_url = f"ws://127.0.0.1:{asgi_live_server.port}/ws/jobs/{job.full_name}/terminal/worker/0/?cols=80&rows=24"
    # The portal's own page may open it (the task is not running: it opens, says so and closes).
    assert page.evaluate(OPEN_TERMINAL_JS, socket_url) == "opened"
    page.goto(page_on_another_port)
    assert page.evaluate(OPEN_TERMINAL_JS, socket_url) == "refused"
    context.close()


# -- a process task listening on the portal's loopback (issue 27, item 4) ---------------------------

# The task answers on its declared port and on 127.0.0.1:<LOOPBACK_PORT> (inside its own network).
ECHO_ON_BOTH = COOKIE_ECHO.replace(
    'http.server.HTTPServer(("", port), Echo).serve_forever()',
    "import threading\n"
    'threading.Thread(target=http.server.HTTPServer(("127.0.0.1", {loopback}), Echo).serve_forever).start()\n'
    'http.server.HTTPServer(("", port), Echo).serve_forever()',
)


@pytest.fixture
def loopback_port() -> int:
    """A port free on the host's 127.0.0.1, where the task listens inside its own network."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@pytest.fixture
def job_on_the_loopback(user, local_node, scheduler, loopback_port) -> Iterator[Job]:
    text = serving_job()
    command = f"python3 -c {shlex.quote(ECHO_ON_BOTH.format(loopback=loopback_port))}"
    text = text.replace(json.dumps(f"python3 -c {shlex.quote(COOKIE_ECHO)}"), json.dumps(command))
    job = submit_job(user, text)
    run_scheduler_until(scheduler, job, "RUNNING")
    yield job
    stop_job(job, by=user)
    run_scheduler_until(scheduler, job, "STOPPED")


def test_a_process_tasks_loopback_page_is_out_of_the_browsers_reach(page, login, job_on_the_loopback, loopback_port):
    login()
    page.goto(f"/jobs/{job_on_the_loopback.full_name}/")
    port = job_on_the_loopback.tasks.get().ports["http"][0]
    expect(page.locator("[data-task-port]", has_text=f"127.0.0.2:{port}")).to_be_visible()
    wait_until_listening("127.0.0.2", port)
    page.goto(f"http://127.0.0.2:{port}/")  # its declared port: served, without the portal's cookies
    page.wait_for_function("document.body.innerText.startsWith('cookies sent to the task')")
    assert page.locator("body").inner_text() == "cookies sent to the task: None"
    with pytest.raises(Exception, match="ERR_CONNECTION_REFUSED"):
        page.goto(f"http://127.0.0.1:{loopback_port}/")  # inside the task's own network only
