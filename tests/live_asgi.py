"""The portal's ASGI app (HTTP + websockets) served by daphne in a thread, for browser tests.

A thread, not a process: the test database (SQLite in memory, shared cache) is visible to it.
Twisted's reactor runs once per process, so there is one server per test session
(the `asgi_live_server` fixture in tests/conftest.py); static files come from the finders.
"""

from __future__ import annotations

import socket
import threading
import time
from typing import Any

from tests.processes import free_port


class AsgiLiveServer:
    def __init__(self) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self._server: Any = None
        self._thread: threading.Thread | None = None

    def start(self, timeout: float = 20.0) -> None:
        from daphne.server import Server  # installs the asyncio reactor: import it here, first
        from django.contrib.staticfiles.handlers import ASGIStaticFilesHandler

        from pai_portal.asgi import app_proxy, portal_application
        from web.app_proxy.proxy import route_by_host

        self._server = Server(
            # (The apps' hosts go to their proxy before the portal's static files: Jupyter has a /static/ too.)
            application=route_by_host(ASGIStaticFilesHandler(portal_application), app_proxy),
            endpoints=[f"tcp:port={self.port}:interface=127.0.0.1"],
            signal_handlers=False,
            verbosity=0,
        )
        self._thread = threading.Thread(target=self._server.run, name="daphne-live", daemon=True)
        self._thread.start()
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=0.5).close()
                return
            except OSError:
                time.sleep(0.05)
        raise RuntimeError(f"daphne did not listen on port {self.port}")

    def stop(self) -> None:
        from twisted.internet import reactor as twisted_reactor

        reactor: Any = twisted_reactor
        if self._thread is not None and self._thread.is_alive():
            reactor.callFromThread(reactor.stop)
            self._thread.join(timeout=10)
