"""An app behind the proxy: a real HTTP + websocket server (aiohttp) standing in for a task's
Jupyter, a running job whose task serves it, and requests to its own host on the live server."""

from __future__ import annotations

import asyncio
import socket
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest
import requests
from aiohttp import WSMsgType, web

from clusters.models import Node
from jobs.interactive import app_origin
from jobs.models import InteractiveApp, Job
from tests.docker.conftest import (  # noqa: F401  (fixtures of the Docker tests, for tests/apps/test_jupyter.py)
    docker_engine,
    docker_node,
    namespace,
    new_scheduler,
    run_until,
    scheduler,
)
from tests.factories import create_job
from tests.ssh.conftest import chromium  # noqa: F401  (a fixture)
from web.app_proxy import passes

BIG_BYTES = 3 * 1024 * 1024


@dataclass
class Upstream:
    port: int
    seen: list[dict[str, Any]] = field(default_factory=list)  # each request as the app got it


def _app(seen: list[dict[str, Any]]) -> web.Application:
    async def record(request: web.Request) -> dict[str, Any]:
        body = await request.read()
        entry = {
            "method": request.method,
            "path": request.path_qs,
            "raw": request.raw_path,
            "headers": dict(request.headers),
            "body": body,
        }
        seen.append(entry)
        return entry

    async def echo(request: web.Request) -> web.Response:
        entry = await record(request)
        response = web.json_response({**entry, "body": entry["body"].decode()})
        response.set_cookie("app_cookie", "from-the-app")
        response.headers.add("Set-Cookie", "tossed=1; Domain=localhost; Path=/")
        response.headers.add("Set-Cookie", f"{passes.SESSION_COOKIE}=forged-by-the-app; Path=/")
        response.headers.add("Set-Cookie", f"{passes.SESSION_COOKIE} =forged-with-a-space; Path=/")
        response.headers.add("Set-Cookie", "spaced=1; DOMAIN =apps.localhost; Path=/")
        response.headers.add("Set-Cookie", 'prefs={"a":1}; domain=apps.localhost; max-age=31536000')
        return response

    async def page(request: web.Request) -> web.Response:
        await record(request)
        return web.Response(text="<html><body><h1>the app</h1></body></html>", content_type="text/html")

    async def big(request: web.Request) -> web.StreamResponse:
        await record(request)
        response = web.StreamResponse()
        response.content_type = "application/octet-stream"
        await response.prepare(request)
        chunk = bytes(range(256)) * 256
        for _ in range(BIG_BYTES // len(chunk)):
            await response.write(chunk)
        await response.write_eof()
        return response

    async def websocket(request: web.Request) -> web.WebSocketResponse:
        await record(request)
        socket_ = web.WebSocketResponse(protocols=("v1.test",))
        await socket_.prepare(request)
        async for message in socket_:
            if message.type == WSMsgType.TEXT:
                await socket_.send_str("echo:" + message.data)
            elif message.type == WSMsgType.BINARY:
                await socket_.send_bytes(message.data[::-1])
        return socket_

    app = web.Application(client_max_size=64 * 1024 * 1024)
    app.router.add_route("*", "/echo", echo)
    app.router.add_get("/page", page)
    app.router.add_get("/big", big)
    app.router.add_get("/ws", websocket)
    app.router.add_get("/raw/{tail:.*}", echo)
    return app


@pytest.fixture(scope="session")
def upstream() -> Iterator[Upstream]:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    server = Upstream(port)
    loop = asyncio.new_event_loop()
    runner = web.AppRunner(_app(server.seen))
    loop.run_until_complete(runner.setup())
    loop.run_until_complete(web.TCPSite(runner, "127.0.0.1", port).start())
    thread = threading.Thread(target=loop.run_forever, name="upstream-app", daemon=True)
    thread.start()
    yield server
    loop.call_soon_threadsafe(loop.stop)
    thread.join(5)


@pytest.fixture
def running_app(db, user, default_vc, upstream) -> Callable[..., InteractiveApp]:
    """A running job whose first task serves an app on the upstream server's port."""
    node = Node.objects.get_or_create(name="local", defaults={"address": "127.0.0.1"})[0]

    def make(kind: str = "jupyter", users: list[str] | None = None, idle_seconds: int | None = None) -> InteractiveApp:
        job = create_job(user, f"app-{kind}", roles={"main": 1}, state="RUNNING")
        job.tasks.update(state="RUNNING", node=node, ports={kind: [upstream.port]})
        return InteractiveApp.objects.create(
            job=job,
            kind=kind,
            role="main",
            port_label=kind,
            slug=f"s{job.pk}x{kind}",
            users=users or [],
            idle_seconds=idle_seconds,
        )

    return make


@pytest.fixture
def serving_job(transactional_db, running_app, settings, asgi_live_server) -> Callable[..., InteractiveApp]:
    """running_app's apps, committed (the live server's proxy reads them), behind the live server."""
    settings.PAI_PUBLIC_URL = asgi_live_server.url
    return running_app


@dataclass
class Browser:
    """What a browser at an app's origin sends: its Host, its Origin, the proxy's cookie."""

    base: str  # the live server's address
    host: str  # <slug>.apps.localhost:<port>
    cookie: str = ""

    def get(self, path: str, **kwargs: Any) -> requests.Response:
        return self.request("GET", path, **kwargs)

    def request(self, method: str, path: str, origin: str | None = None, **kwargs: Any) -> requests.Response:
        headers = {"Host": self.host, **kwargs.pop("headers", {})}
        if origin:
            headers["Origin"] = origin
        if self.cookie:
            headers["Cookie"] = self.cookie + ("; " + headers["Cookie"] if "Cookie" in headers else "")
        return requests.request(method, self.base + path, headers=headers, allow_redirects=False, timeout=20, **kwargs)

    @property
    def origin(self) -> str:
        return f"http://{self.host}"


@pytest.fixture
def browser_at(asgi_live_server, settings) -> Callable[..., Browser]:
    """A client at the app's origin, signed in as `user` through a ticket (None: anonymous)."""
    settings.PAI_PUBLIC_URL = asgi_live_server.url

    def at(app: InteractiveApp, user: Any = None) -> Browser:
        origin = app_origin(app, "http", asgi_live_server.port)
        browser = Browser(asgi_live_server.url, origin.removeprefix("http://"))
        if user is not None:
            answer = browser.get(f"{passes.SIGN_IN_PATH}?ticket={passes.ticket_for(app.slug, user.pk)}&next=/")
            assert answer.status_code == 303, answer.text
            browser.cookie = answer.headers["Set-Cookie"].split(";")[0]
        return browser

    return at


def the_job(app: InteractiveApp) -> Job:
    return Job.objects.get(pk=app.job_id)
