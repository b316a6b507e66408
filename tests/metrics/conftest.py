"""The metrics tests' fixtures: process tasks (tests/scheduler), a real HTTP server that receives
webhooks and a real SMTP server that takes mail or stalls."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from bench.mail_server import MailServer
from tests.scheduler.conftest import process_node, run_until, scheduler, submit

__all__ = [
    "MailServer",
    "Receiver",
    "mail_server",
    "mailed_user",
    "process_node",
    "receiver",
    "run_until",
    "scheduler",
    "submit",
]


class Receiver:
    """A real HTTP server: answers each POST with the next of `statuses` (then 200)."""

    def __init__(self) -> None:
        self.posts: list[dict[str, Any]] = []
        self.statuses: list[int] = []
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers["Content-Length"]))
                receiver.posts.append({"headers": dict(self.headers), "body": body, "path": self.path})
                self.send_response(receiver.statuses.pop(0) if receiver.statuses else 200)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_port}/hooks/pai?team=a"

    def events(self) -> list[str]:
        return [post["headers"]["X-PAI-Event"] for post in self.posts]


@pytest.fixture
def receiver(settings) -> Iterator[Receiver]:
    settings.PAI_WEBHOOK_ALLOWED_HOSTS = ["127.0.0.1"]
    found = Receiver()
    # serve_forever looks for shutdown() once a poll: its default half second was each test's wait
    thread = threading.Thread(target=found.server.serve_forever, args=(0.01,), daemon=True)
    thread.start()
    yield found
    found.server.shutdown()
    found.server.server_close()


@pytest.fixture
def mailed_user(user):
    """alice, with an email address."""
    user.email = "alice@example.org"
    user.save()
    return user


@pytest.fixture
def mail_server(settings) -> Iterator[MailServer]:
    """Django's SMTP backend pointed at a real local MailServer (EMAIL_TIMEOUT: 5 s, the default)."""
    server = MailServer().start()
    settings.EMAIL_BACKEND = "django.core.mail.backends.smtp.EmailBackend"
    settings.EMAIL_HOST, settings.EMAIL_PORT, settings.EMAIL_TIMEOUT = server.host, server.port, 5.0
    yield server
    server.stop()
