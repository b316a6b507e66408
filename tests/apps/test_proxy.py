"""The proxy in front of an app, over real HTTP and websockets: who gets in, what the app sees,
what the browser sees, and that bodies stream."""

from __future__ import annotations

import asyncio
import http.client
import time
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest
import websockets
from websockets.typing import Subprotocol

from jobs.models import InteractiveApp
from tests.apps.conftest import BIG_BYTES
from web.app_proxy import apps, passes

pytestmark = pytest.mark.django_db(transaction=True)


def test_it_sends_an_anonymous_browser_to_the_portal_to_sign_in(serving_job, browser_at, settings):
    app = serving_job()
    answer = browser_at(app).get("/tree?x=1")
    assert answer.status_code == 302
    assert answer.headers["Location"] == f"{settings.PAI_PUBLIC_URL}/apps/{app.slug}/open/?next=%2Ftree%3Fx%3D1"


def test_it_refuses_an_anonymous_post(serving_job, browser_at, upstream):
    app = serving_job()
    before = len(upstream.seen)
    assert browser_at(app).request("POST", "/echo", data=b"x").status_code == 403
    assert len(upstream.seen) == before


def test_it_signs_the_owner_in_with_a_cookie_of_the_apps_origin_only(serving_job, browser_at, user):
    app = serving_job()
    browser = browser_at(app)
    answer = browser.get(f"{passes.SIGN_IN_PATH}?ticket={passes.ticket_for(app.slug, user.pk)}&next=/lab")
    assert answer.status_code == 303
    assert answer.headers["Location"] == "/lab"
    cookie = answer.headers["Set-Cookie"]
    assert cookie.startswith(passes.SESSION_COOKIE + "=")
    assert "HttpOnly" in cookie and "SameSite=Lax" in cookie and "Domain" not in cookie


def test_it_takes_a_ticket_once(serving_job, browser_at, user):
    app = serving_job()
    ticket = passes.ticket_for(app.slug, user.pk)
    assert browser_at(app).get(f"{passes.SIGN_IN_PATH}?ticket={ticket}").status_code == 303
    assert browser_at(app).get(f"{passes.SIGN_IN_PATH}?ticket={ticket}").status_code == 403


def test_it_refuses_a_forged_ticket_and_another_apps_ticket(serving_job, browser_at, user):
    app, other = serving_job("jupyter"), serving_job("tensorboard")
    signed = passes.ticket_for(app.slug, user.pk)
    forged = signed[:-2] + ("BB" if signed.endswith("AA") else "AA")  # (a signature ends in AA once in ~1,000)
    assert browser_at(app).get(f"{passes.SIGN_IN_PATH}?ticket={forged}").status_code == 403
    ticket = passes.ticket_for(other.slug, user.pk)
    assert browser_at(app).get(f"{passes.SIGN_IN_PATH}?ticket={ticket}").status_code == 403


def test_it_refuses_another_users_ticket_for_an_app_not_shared_with_them(serving_job, browser_at, other_user):
    app = serving_job()
    assert (
        browser_at(app).get(f"{passes.SIGN_IN_PATH}?ticket={passes.ticket_for(app.slug, other_user.pk)}").status_code
        == 403
    )


def test_it_lets_in_a_user_the_app_is_shared_with(serving_job, browser_at, other_user):
    app = serving_job(users=["bob"])
    assert browser_at(app, other_user).get("/echo").status_code == 200


def test_it_refuses_a_session_cookie_of_another_app(serving_job, browser_at, user):
    app, other = serving_job("jupyter"), serving_job("tensorboard")
    browser = browser_at(app)
    browser.cookie = f"{passes.SESSION_COOKIE}={passes.session_value(passes.Pass(other.slug, user.pk))}"
    assert browser.get("/echo").status_code == 302


def test_it_forwards_without_the_proxys_cookie_and_with_jupyters_token(serving_job, browser_at, user, upstream):
    app = serving_job("jupyter")
    answer = browser_at(app, user).get("/echo?a=1", headers={"Cookie": "_xsrf=2|abc", "Authorization": "token mine"})
    assert answer.status_code == 200
    seen = answer.json()["headers"]
    assert seen["Cookie"] == "_xsrf=2|abc"
    assert seen["Authorization"].startswith("token ") and seen["Authorization"] != "token mine"
    assert seen["X-Forwarded-Host"] == f"{app.slug}.apps.localhost:{urlsplit(browser_at(app).base).port}"
    assert answer.json()["path"] == "/echo?a=1"


def test_it_forwards_the_path_as_the_browser_sent_it(serving_job, browser_at, user):
    """Jupyter's contents API names `dir%2Ffile.ipynb` as one segment."""
    raw = browser_at(serving_job("http"), user).get("/raw/api/contents/dir%2Fa%20b.ipynb?x=%2F").json()["raw"]
    assert raw == "/raw/api/contents/dir%2Fa%20b.ipynb?x=%2F"


def test_it_passes_the_apps_cookies_but_not_one_named_as_its_own(serving_job, browser_at, user):
    answer = browser_at(serving_job(), user).get("/echo")
    cookies = answer.raw.headers.getlist("Set-Cookie")
    assert any(c.startswith("app_cookie=from-the-app") for c in cookies)
    assert not any(c.startswith(passes.SESSION_COOKIE) for c in cookies)  # (a space before `=` too)


def test_it_keeps_the_apps_cookies_to_the_apps_own_host(serving_job, browser_at, user):
    cookies = browser_at(serving_job(), user).get("/echo").raw.headers.getlist("Set-Cookie")
    assert "tossed=1; Path=/" in cookies  # no Domain=localhost: never a cookie for the portal's host


def test_it_keeps_the_apps_cookies_to_the_apps_own_host_however_domain_is_spelled(serving_job, browser_at, user):
    """A cookie of the apps' parent domain would reach every app, and shadow their cookies."""
    cookies = browser_at(serving_job(), user).get("/echo").raw.headers.getlist("Set-Cookie")
    assert "spaced=1; Path=/" in cookies
    assert 'prefs={"a":1}; max-age=31536000' in cookies


BAD_COOKIES = 'prefs={"a":1}; quoted="unterminated; a b=c; =no-name; bare'


def test_it_finds_its_cookie_behind_cookies_it_cannot_parse_and_a_forged_one(serving_job, browser_at, user):
    browser = browser_at(serving_job(), user)
    browser.cookie = f"{BAD_COOKIES}; {passes.SESSION_COOKIE}=not-a-session; {browser.cookie}"
    assert browser.get("/echo").status_code == 200


def test_it_hands_the_app_its_cookies_as_the_browser_sent_them_without_the_proxys(
    serving_job, browser_at, user, upstream
):
    browser = browser_at(serving_job(), user)
    browser.cookie = f"{browser.cookie}; {BAD_COOKIES}"
    browser.get("/echo")
    assert upstream.seen[-1]["headers"]["Cookie"] == BAD_COOKIES


@pytest.mark.parametrize("method", ["GET", "OPTIONS"])
def test_it_answers_a_request_for_no_path_400(serving_job, browser_at, user, asgi_live_server, method):
    browser = browser_at(serving_job(), user)
    connection = http.client.HTTPConnection("127.0.0.1", asgi_live_server.port, timeout=20)
    connection.request(method, "*", headers={"Host": browser.host, "Cookie": browser.cookie})
    assert connection.getresponse().status == 400


def test_it_refuses_a_post_from_another_origin(serving_job, browser_at, user, upstream):
    browser = browser_at(serving_job(), user)
    before = len(upstream.seen)
    assert browser.request("POST", "/echo", origin="http://evil.apps.localhost:1", data=b"x").status_code == 403
    assert len(upstream.seen) == before
    answer = browser.request("POST", "/echo", origin=browser.origin, data=b"payload")
    assert answer.status_code == 200 and answer.json()["body"] == "payload"


def test_it_streams_a_big_download_whole(serving_job, browser_at, user):
    answer = browser_at(serving_job("http"), user).get("/big")
    assert answer.status_code == 200
    assert len(answer.content) == BIG_BYTES
    assert answer.content[:256] == bytes(range(256))


def test_it_streams_a_big_upload_whole(serving_job, browser_at, user):
    browser = browser_at(serving_job("http"), user)
    body = b"z" * (2 * 1024 * 1024)
    answer = browser.request("PUT", "/echo", origin=browser.origin, data=iter([body[:1000], body[1000:]]))
    assert answer.status_code == 200 and len(answer.json()["body"]) == len(body)


def test_it_shows_a_starting_page_while_the_job_has_not_started_its_task(serving_job, browser_at, user):
    app = serving_job()
    app.job.tasks.update(state="WAITING")
    answer = browser_at(app, user).get("/")
    assert answer.status_code == 503 and "reloads" in answer.text


def test_it_says_an_ended_jobs_app_is_gone(serving_job, browser_at, user, monkeypatch):
    monkeypatch.setattr(apps, "LOOKUP_S", 0.05)  # (3 s: the view this test waits out to see the change)
    app = serving_job()
    browser = browser_at(app, user)
    type(app.job).objects.filter(pk=app.job_id).update(state="STOPPED")
    time.sleep(2 * apps.LOOKUP_S)  # the proxy's view of an app is at most LOOKUP_S old
    answer = browser.get("/")
    assert answer.status_code == 410 and "STOPPED" in answer.text


def test_it_injects_the_idle_warning_script_into_pages_of_an_app_stopped_when_idle(serving_job, browser_at, user):
    browser = browser_at(serving_job(idle_seconds=600), user)
    page = browser.get("/page", headers={"Accept": "text/html", "Accept-Encoding": "gzip"}).text
    assert '<script src="/.pai/app.js" defer></script></body>' in page
    plain = browser_at(serving_job("http"), user).get("/page", headers={"Accept": "text/html"}).text
    assert "/.pai/app.js" not in plain


def test_it_records_traffic_as_the_apps_activity(serving_job, browser_at, user):
    app = serving_job()
    browser_at(app, user).get("/echo")
    for _ in range(250):  # (written on a thread of the server's own, a moment later)
        app.refresh_from_db()
        if app.last_activity_at:
            break
        time.sleep(0.02)
    assert app.last_activity_at is not None


def test_it_says_how_long_an_idle_app_has_left(serving_job, browser_at, user):
    app = serving_job(idle_seconds=600)
    InteractiveApp.objects.filter(pk=app.pk).update(
        ready_at="2026-01-01T00:00:00Z", idle_warned_at="2026-01-01T00:05:00Z"
    )
    status = browser_at(app, user).get("/.pai/status").json()
    assert status["warned"] is True and status["secondsLeft"] == 0 and "idle" in status["message"]


async def _talk(browser, origin: Any, cookie: str) -> list[str | bytes]:
    # The app's host in the URL (its Host header), the connection to the live server's address.
    port = urlsplit(browser.base).port
    async with websockets.connect(
        f"ws://{browser.host}/ws",
        origin=origin,
        additional_headers={"Cookie": cookie},
        subprotocols=[Subprotocol("v1.test")],
        host="127.0.0.1",
        port=port,
    ) as socket_:
        assert socket_.subprotocol == "v1.test"
        await socket_.send("hello")
        text = await asyncio.wait_for(socket_.recv(), 10)
        await socket_.send(b"\x01\x02\x03")
        data = await asyncio.wait_for(socket_.recv(), 10)
        return [text, data]


def test_it_relays_a_websocket_both_ways(serving_job, browser_at, user):
    browser = browser_at(serving_job(), user)
    assert asyncio.run(_talk(browser, browser.origin, browser.cookie)) == ["echo:hello", b"\x03\x02\x01"]


@pytest.mark.parametrize("who", ["anonymous", "foreign origin"])
def test_it_refuses_a_websocket_without_a_session_or_from_another_origin(serving_job, browser_at, user, who):
    browser = browser_at(serving_job(), user)
    cookie, origin = ("", browser.origin) if who == "anonymous" else (browser.cookie, "http://evil.example")
    with pytest.raises(websockets.exceptions.InvalidStatus):
        asyncio.run(_talk(browser, origin, cookie))


def test_the_portals_open_view_sends_the_owner_to_the_apps_origin_with_a_ticket(serving_job, client, user, settings):
    app = serving_job()
    client.force_login(user)
    answer = client.get(f"/apps/{app.slug}/open/?next=/notebooks/a.ipynb")
    assert answer.status_code == 302
    where = urlsplit(answer["Location"])
    assert where.hostname == f"{app.slug}.{settings.PAI_APPS_DOMAIN}"
    assert where.path == passes.SIGN_IN_PATH
    query = parse_qs(where.query)
    assert query["next"] == ["/notebooks/a.ipynb"]
    assert passes.redeem_ticket(query["ticket"][0], app.slug) == passes.Pass(app.slug, user.pk)


def test_the_portals_open_view_refuses_another_user(serving_job, client, other_user):
    app = serving_job()
    client.force_login(other_user)
    answer = client.get(f"/apps/{app.slug}/open/")
    assert answer.status_code == 403 and b"data-app-refused" in answer.content


def test_the_portals_open_view_never_sends_a_browser_elsewhere(serving_job, client, user):
    app = serving_job()
    client.force_login(user)
    location = client.get(f"/apps/{app.slug}/open/?next=//evil.example/x")["Location"]
    assert parse_qs(urlsplit(location).query)["next"] == ["/"]
