"""The authenticated proxy in front of a task's web server (Jupyter, TensorBoard, an `http` port).

Each app is served at an origin of its own, `<slug>.<PAI_APPS_DOMAIN>`: the portal's cookies are
never sent there and the app's pages cannot read them (nor one app another's). `route_by_host`
hands every request for such a host to `AppProxy` before the portal sees it.

The rules, per request: a session cookie of this origin (web/app_proxy/passes.py) for a user who
may open the app (jobs.interactive.may_open: the owner, named users, the members of the group it
is shared with; re-read every few seconds, also during an open websocket), else a GET goes to the
portal's Open page to get one and anything else is refused; a state-changing request or a
websocket whose Origin is another host is refused (the proxy's CSRF rule: apps of one domain are
same-site to each other); our cookie is taken out of what the app receives and may not be set by
it, and the app's own cookies lose any Domain (no cookie for its parent domain, the portal's;
web/app_proxy/cookies.py, which reads cookies leniently: one the browser holds that is no valid
cookie never hides ours); a request for no path (`OPTIONS *`) is answered 400;
Jupyter's token is added here, so the browser never holds it. Bodies stream both ways (aiohttp),
websockets are relayed message by message, and traffic resets the app's idle clock
(at most one write per app and ACTIVITY_WRITE_S per process). HTML pages of an app that can be
stopped when idle get a small script that shows the warning (`/.pai/app.js`).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from html import escape
from typing import Any
from urllib.parse import parse_qs, quote, urlsplit

import aiohttp
from asgiref.sync import sync_to_async
from django.conf import settings
from django.utils import timezone, translation
from django.utils.translation import get_supported_language_variant
from django.utils.translation import gettext as _
from django.utils.translation.trans_real import parse_accept_lang_header
from yarl import URL

from accounts.links import public_url
from jobs.interactive import record_activity, slug_of_host
from jobs.protocol.hooks import JUPYTER_PLUGIN
from web.app_proxy import apps, cookies, passes
from web.app_proxy.apps import AppView, allowed, app_view

Scope = dict[str, Any]
Receive = Callable[[], Awaitable[dict[str, Any]]]
Send = Callable[[dict[str, Any]], Awaitable[None]]

HOP_BY_HOP = frozenset(
    {
        b"connection",
        b"keep-alive",
        b"proxy-authenticate",
        b"proxy-authorization",
        b"te",
        b"trailer",
        b"trailers",
        b"transfer-encoding",
        b"upgrade",
    }
)
SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})
ACTIVITY_WRITE_S = 10.0
INJECT_MAX_BYTES = 4 * 1024 * 1024
PIECE_BYTES = 256 * 1024  # HTML pages bigger than this go through untouched
BANNER_SCRIPT = b'<script src="/.pai/app.js" defer></script>'
APP_JS = """(function () {
  var bar = null;
  function show(text) {
    if (!bar) {
      bar = document.createElement("div");
      bar.setAttribute("role", "alert");
      bar.id = "pai-idle-warning";
      bar.style.cssText = "position:fixed;top:0;left:0;right:0;z-index:2147483647;padding:10px 14px;" +
        "background:#fff3cd;color:#533f03;border-bottom:1px solid #e0c060;font:15px/1.4 sans-serif";
      var keep = document.createElement("button");
      keep.id = "pai-keep-running";
      keep.style.cssText = "margin-left:12px;min-height:44px;padding:0 14px;font:inherit";
      keep.onclick = function () { fetch("/.pai/keep-running", {method: "POST"}).then(check); };
      bar.appendChild(document.createElement("span"));
      bar.appendChild(keep);
      document.body.appendChild(bar);
    }
    bar.firstChild.textContent = text.message;
    bar.lastChild.textContent = text.keep;
  }
  var asked = 0;  // only the latest look counts: an older answer may arrive after "keep running"
  function check() {
    var mine = ++asked;
    fetch("/.pai/status").then(function (r) { return r.json(); }).then(function (s) {
      if (mine !== asked) { return; }
      if (s.warned) { show(s); } else if (bar) { bar.remove(); bar = null; }
    }).catch(function () {});
  }
  window.paiIdleCheck = check;
  check();
  setInterval(check, 15000);
})();
"""


class AppProxy:
    def __init__(self) -> None:
        self._clients: dict[asyncio.AbstractEventLoop, aiohttp.ClientSession] = {}
        self._written: dict[str, float] = {}
        self._tasks: set[asyncio.Task[Any]] = set()

    def _client(self) -> aiohttp.ClientSession:
        loop = asyncio.get_running_loop()
        client = self._clients.get(loop)
        if client is None or client.closed:
            client = aiohttp.ClientSession(
                auto_decompress=False,
                connector=aiohttp.TCPConnector(limit=0, ttl_dns_cache=60),
                timeout=aiohttp.ClientTimeout(total=None, sock_connect=10, sock_read=300),
                cookie_jar=aiohttp.DummyCookieJar(),
            )
            self._clients[loop] = client
        return client

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        slug = slug_of_host(header(scope, b"host"))
        assert slug is not None  # route_by_host sends only the apps' hosts here
        with translation.override(_language(scope)):
            if scope["type"] == "http":
                await self._http(slug, scope, receive, send)
            elif scope["type"] == "websocket":
                await self._websocket(slug, scope, receive, send)

    # ---- HTTP ----------------------------------------------------------------------------
    async def _http(self, slug: str, scope: Scope, receive: Receive, send: Send) -> None:
        path, method = scope["path"], scope["method"]
        if not path.startswith("/"):  # `OPTIONS *`, or a request line no app can be asked
            return await page(send, 400, _("Bad request"), _("Ask for a path of the app, starting with /."))
        if path == passes.SIGN_IN_PATH:
            return await self._sign_in(slug, scope, send)
        view = await app_view(slug)
        if view is None:
            return await page(send, 404, _("No such app"), _("This app does not exist (any more)."))
        granted = cookies.session_pass(cookie_header(scope), slug)
        if granted is None or not await allowed(slug, granted.user_id):
            if method in ("GET", "HEAD"):
                return await redirect(send, open_url(slug, path_with_query(scope)))
            return await page(send, 403, _("Sign in first"), _("Open this app from its job's page."))
        if method not in SAFE_METHODS and not same_origin(scope):
            return await page(send, 403, _("Refused"), _("A page of another site may not send this app requests."))
        if path.startswith("/.pai/"):
            return await self._own(slug, view, path, method, send)
        if view.target is None:
            return await not_running(send, view)
        self._touch(slug)
        await self._forward(view, scope, receive, send)

    async def _sign_in(self, slug: str, scope: Scope, send: Send) -> None:
        query = parse_qs(scope.get("query_string", b"").decode("latin-1"))
        ticket = (query.get("ticket") or [""])[0]
        granted = await sync_to_async(passes.redeem_ticket, thread_sensitive=False)(ticket, slug)
        if granted is None or not await allowed(slug, granted.user_id):
            return await page(
                send,
                403,
                _("This link has expired"),
                _("Open the app again from its job's page."),
                link=open_url(slug, "/"),
            )
        secure = "; Secure" if scope.get("scheme") == "https" else ""
        cookie = (
            f"{passes.SESSION_COOKIE}={passes.session_value(granted)}; Path=/; HttpOnly; SameSite=Lax"
            f"; Max-Age={passes.SESSION_S}{secure}"
        )
        target = passes.safe_next((query.get("next") or ["/"])[0])
        await send(
            {
                "type": "http.response.start",
                "status": 303,
                "headers": [(b"location", target.encode()), (b"set-cookie", cookie.encode()), *NO_STORE],
            }
        )
        await send({"type": "http.response.body", "body": b""})

    async def _own(self, slug: str, view: AppView, path: str, method: str, send: Send) -> None:
        """The proxy's own paths on the app's origin (they do not count as the app's traffic)."""
        if path == "/.pai/app.js":
            return await respond(send, 200, APP_JS.encode(), b"text/javascript; charset=utf-8")
        if path == "/.pai/keep-running" and method == "POST":
            self._touch(slug, force=True)
            await asyncio.sleep(0)
        elif path != "/.pai/status":
            return await page(send, 404, _("Not found"), path)
        fresh = await app_view(slug, fresh=path == "/.pai/status")
        await respond(send, 200, json.dumps(status_of(fresh or view)).encode(), b"application/json")

    async def _forward(self, view: AppView, scope: Scope, receive: Receive, send: Send) -> None:
        assert view.target is not None
        url = f"http://{view.target.host}:{view.target.port}{target_path(scope)}"
        inject = bool(view.idle_seconds) and b"text/html" in header(scope, b"accept").encode()
        headers = upstream_headers(scope, view, identity=inject)
        try:
            async with self._client().request(
                scope["method"],
                URL(url, encoded=True),
                headers=headers,
                data=await request_body(receive),
                allow_redirects=False,
                skip_auto_headers=("Accept-Encoding", "User-Agent", "Content-Type"),
            ) as answer:
                kept = response_headers(answer.raw_headers)
                content_type = answer.headers.get("Content-Type", "")
                plain = not answer.headers.get("Content-Encoding")
                if inject and plain and answer.status == 200 and content_type.startswith("text/html"):
                    body = await answer.content.read(INJECT_MAX_BYTES + 1)
                    if len(body) <= INJECT_MAX_BYTES:
                        body = inject_banner(body)
                        kept = [(k, v) for k, v in kept if k != b"content-length"]
                        kept.append((b"content-length", str(len(body)).encode()))
                        return await respond_raw(send, answer.status, kept, body)
                    return await stream(send, answer.status, kept, answer.content, first=body)
                await stream(send, answer.status, kept, answer.content)
        except (TimeoutError, aiohttp.ClientConnectionError):
            await page(
                send,
                502,
                _("The app does not answer"),
                _("Its server is not listening yet, or has stopped. Try again in a moment."),
                refresh=5,
            )

    # ---- websockets ------------------------------------------------------------------------
    async def _websocket(self, slug: str, scope: Scope, receive: Receive, send: Send) -> None:
        if (await receive())["type"] != "websocket.connect":
            return
        view = await app_view(slug)
        granted = cookies.session_pass(cookie_header(scope), slug)
        if view is None or granted is None or not same_origin(scope) or not await allowed(slug, granted.user_id):
            return await send({"type": "websocket.close", "code": 4403})
        if view.target is None:
            return await send({"type": "websocket.close", "code": 1013})
        url = f"ws://{view.target.host}:{view.target.port}{target_path(scope)}"
        try:
            upstream = await self._client().ws_connect(
                URL(url, encoded=True),
                headers=upstream_headers(scope, view, websocket=True),
                protocols=tuple(scope.get("subprotocols") or ()),
                max_msg_size=0,
                autoclose=False,
            )
        except (TimeoutError, aiohttp.ClientError):
            return await send({"type": "websocket.close", "code": 1011})
        await send({"type": "websocket.accept", "subprotocol": upstream.protocol})
        self._touch(slug)
        await relay(upstream, receive, send, lambda: self._touch(slug), lambda: allowed(slug, granted.user_id))

    # ---- the idle clock ------------------------------------------------------------------
    def _touch(self, slug: str, force: bool = False) -> None:
        now = time.monotonic()
        if not force and now - self._written.get(slug, float("-inf")) < ACTIVITY_WRITE_S:
            return
        self._written[slug] = now
        if len(self._written) > 10_000:
            self._written.clear()
        task = asyncio.ensure_future(sync_to_async(record_activity, thread_sensitive=False)(slug))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)


async def relay(
    upstream: aiohttp.ClientWebSocketResponse,
    receive: Receive,
    send: Send,
    touch: Callable[[], None],
    still_allowed: Callable[[], Awaitable[bool]],
) -> None:
    """Messages both ways until either side closes; the browser's count as the app's traffic. The
    user's right to the app is asked again every LOOKUP_S: a socket opened before the owner
    unshared it, or before its user left the group, is closed (4403) within seconds."""

    async def from_browser() -> None:
        while True:
            message = await receive()
            if message["type"] == "websocket.disconnect":
                return
            if message.get("text") is not None:
                await upstream.send_str(message["text"])
            elif message.get("bytes") is not None:
                await upstream.send_bytes(message["bytes"])
            touch()

    async def from_app() -> None:
        async for message in upstream:
            if message.type == aiohttp.WSMsgType.TEXT:
                await send({"type": "websocket.send", "text": message.data})
            elif message.type == aiohttp.WSMsgType.BINARY:
                await send({"type": "websocket.send", "bytes": message.data})
            else:
                return

    async def while_allowed() -> None:
        while await still_allowed():
            await asyncio.sleep(apps.LOOKUP_S)

    watch = asyncio.ensure_future(while_allowed())
    relays = [asyncio.ensure_future(from_browser()), asyncio.ensure_future(from_app()), watch]
    try:
        await asyncio.wait(relays, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for each in relays:
            each.cancel()
        await upstream.close()
        with contextlib.suppress(Exception):  # (the browser may be gone already)
            await send({"type": "websocket.close", "code": 4403 if watch.done() and not watch.cancelled() else 1000})


def route_by_host(portal: Callable[..., Any], proxy: Callable[..., Any]) -> Callable[..., Any]:
    """The apps' hosts to the proxy, every other host to the portal."""

    async def application(scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] in ("http", "websocket") and slug_of_host(header(scope, b"host")) is not None:
            return await proxy(scope, receive, send)
        return await portal(scope, receive, send)

    return application


# ---- requests and answers ----------------------------------------------------------------------
NO_STORE = [(b"cache-control", b"no-store")]


def header(scope: Scope, name: bytes) -> str:
    for key, value in scope.get("headers") or []:
        if key.lower() == name:
            return bytes(value).decode("latin-1")
    return ""


def cookie_header(scope: Scope) -> str:
    """Every Cookie header as one (HTTP/2 may send a header per cookie)."""
    return "; ".join(
        bytes(value).decode("latin-1") for key, value in scope.get("headers") or [] if key.lower() == b"cookie"
    )


def same_origin(scope: Scope) -> bool:
    """No Origin (a navigation, a script of this origin on some browsers) or this very host."""
    origin = header(scope, b"origin")
    return not origin or urlsplit(origin).netloc.lower() == header(scope, b"host").lower()


def target_path(scope: Scope) -> str:
    """The path as the browser sent it (`raw_path`: Jupyter's `dir%2Ffile` stays one segment) and
    its query."""
    raw = scope.get("raw_path")
    path = raw.decode("latin-1") if raw else quote(scope["path"])
    query = scope.get("query_string", b"").decode("latin-1")
    return path + (f"?{query}" if query else "")


def path_with_query(scope: Scope) -> str:
    query = scope.get("query_string", b"").decode("latin-1")
    return scope["path"] + (f"?{query}" if query else "")


def open_url(slug: str, next_path: str) -> str:
    return public_url(f"/apps/{slug}/open/?next={quote(next_path, safe='')}")


def upstream_headers(scope: Scope, view: AppView, identity: bool = False, websocket: bool = False) -> list:
    """The browser's headers for the app: hop-by-hop ones and our cookie out, forwarding ones in."""
    kept: list[tuple[str, str]] = []
    skip = HOP_BY_HOP | {b"cookie", b"x-forwarded-for", b"x-forwarded-proto", b"x-forwarded-host"}
    if websocket:
        skip |= {b"sec-websocket-key", b"sec-websocket-version", b"sec-websocket-extensions", b"sec-websocket-protocol"}
    if identity:
        skip |= {b"accept-encoding"}
    if view.kind == JUPYTER_PLUGIN:
        skip |= {b"authorization"}
        kept.append(("Authorization", f"token {view.token}"))
    for key, value in scope.get("headers") or []:
        if key.lower() not in skip:
            kept.append((key.decode("latin-1"), value.decode("latin-1")))
    if theirs := cookies.for_the_app(cookie_header(scope)):
        kept.append(("Cookie", theirs))
    if identity:
        kept.append(("Accept-Encoding", "identity"))
    client = scope.get("client") or ("", 0)
    kept += [
        ("X-Forwarded-For", str(client[0])),
        ("X-Forwarded-Proto", "https" if scope.get("scheme") in ("https", "wss") else "http"),
        ("X-Forwarded-Host", header(scope, b"host")),
    ]
    return kept


def response_headers(raw: Any) -> list[tuple[bytes, bytes]]:
    kept = []
    for key, value in raw:
        name = bytes(key).lower()
        if name in HOP_BY_HOP:
            continue
        if name == b"set-cookie":
            value = cookies.set_by_the_app(bytes(value))  # never ours, never another host's
            if value is None:
                continue
        kept.append((name, bytes(value)))
    return kept


async def request_body(receive: Receive) -> bytes | AsyncIterator[bytes] | None:
    """The browser's body: whole when it came in one piece, else streamed to the app."""
    first = await receive()
    body = first.get("body", b"")
    if not first.get("more_body"):
        return body or None

    async def rest() -> AsyncIterator[bytes]:
        yield body
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                raise aiohttp.ClientConnectionError("the browser went away")
            yield message.get("body", b"")
            if not message.get("more_body"):
                return

    return rest()


def inject_banner(body: bytes) -> bytes:
    at = body.lower().rfind(b"</body>")
    return body[:at] + BANNER_SCRIPT + body[at:] if at >= 0 else body + BANNER_SCRIPT


def status_of(view: AppView) -> dict[str, Any]:
    left = max(0, round((view.stop_at - timezone.now()).total_seconds())) if view.stop_at else None
    minutes = max(1, round((left or 0) / 60))
    return {
        "warned": view.warned,
        "stopAt": view.stop_at.isoformat() if view.stop_at else None,
        "secondsLeft": left,
        "message": _("This app has been idle: job %(job)s stops in about %(minutes)s min unless you use it.")
        % {"job": view.job_name, "minutes": minutes},
        "keep": _("Keep it running"),
    }


async def stream(send: Send, status: int, headers: list[tuple[bytes, bytes]], body: Any, first: bytes = b"") -> None:
    """The app's answer to the browser, what has arrived sent together up to PIECE_BYTES (fewer,
    bigger sends than one per socket read)."""
    await send({"type": "http.response.start", "status": status, "headers": headers})
    if first:
        await _send_body(send, first)
    while piece := await body.read(PIECE_BYTES):
        # (what has arrived already goes along; a pause in the app's answer is never waited out)
        while len(piece) < PIECE_BYTES and (more := body.read_nowait(PIECE_BYTES - len(piece))):
            piece += more
        await _send_body(send, piece)
    await send({"type": "http.response.body", "body": b""})


async def _send_body(send: Send, chunk: bytes) -> None:
    # A browser that stops reading frees its connection to the app after the portal's write timeout.
    async with asyncio.timeout(settings.PAI_HTTP_WRITE_TIMEOUT):
        await send({"type": "http.response.body", "body": chunk, "more_body": True})


async def respond_raw(send: Send, status: int, headers: list[tuple[bytes, bytes]], body: bytes) -> None:
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


async def respond(send: Send, status: int, body: bytes, content_type: bytes) -> None:
    headers = [(b"content-type", content_type), (b"content-length", str(len(body)).encode()), *NO_STORE]
    await respond_raw(send, status, headers, body)


async def redirect(send: Send, location: str) -> None:
    await respond_raw(send, 302, [(b"location", location.encode()), (b"content-length", b"0"), *NO_STORE], b"")


async def page(send: Send, status: int, title: str, text: str, link: str = "", refresh: int = 0) -> None:
    """The proxy's own small page (it renders no portal template: it runs on the event loop)."""
    back = link or settings.PAI_PUBLIC_URL
    meta = f'<meta http-equiv="refresh" content="{refresh}">' if refresh else ""
    html = (
        f'<!doctype html><html lang="{translation.get_language()}"><head><meta charset="utf-8">'
        f'<meta name="viewport" content="width=device-width, initial-scale=1">{meta}'
        f"<title>{escape(title)}</title></head>"
        '<body style="font:16px/1.5 sans-serif;max-width:40em;margin:2em auto;padding:0 1em">'
        f"<h1>{escape(title)}</h1><p>{escape(text)}</p>"
        f'<p><a href="{escape(back)}" style="display:inline-block;min-height:44px;line-height:44px">'
        f"{escape(_('Back to the portal'))}</a></p></body></html>"
    )
    await respond(send, status, html.encode(), b"text/html; charset=utf-8")


async def not_running(send: Send, view: AppView) -> None:
    if view.job_state in ("WAITING", "RUNNING"):
        text = _("Job %(job)s is starting it. This page reloads until it answers.") % {"job": view.job_name}
        return await page(send, 503, _("Starting"), text, refresh=3)
    text = _("Job %(job)s has ended (%(state)s): its app is gone.") % {"job": view.job_name, "state": view.job_state}
    await page(send, 410, _("Not running"), text)


def _language(scope: Scope) -> str:
    """The browser's first language the portal speaks (the portal's own choice is a cookie of
    the portal's origin, which this origin never sees)."""
    for code, _quality in parse_accept_lang_header(header(scope, b"accept-language")):
        try:
            return get_supported_language_variant(code)
        except LookupError:
            continue
    return settings.LANGUAGE_CODE
