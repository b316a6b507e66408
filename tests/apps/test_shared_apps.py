"""An app shared with a group (issue 50), through the real proxy: a member of the group opens it;
carol, in no group of alice's, is refused at the portal's Open view, at the ticket, with a session
cookie of the app's origin and on a websocket; a member is refused again once alice unshares it or
once they leave the group, an open websocket included (closed 4403)."""

from __future__ import annotations

import asyncio
import time
from urllib.parse import parse_qs, urlsplit

import pytest
import websockets
from websockets.exceptions import ConnectionClosed, InvalidStatus
from websockets.typing import Subprotocol

from jobs.models import InteractiveApp
from web.app_proxy import apps, passes

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def shared_app(serving_job, team):
    app = serving_job()
    InteractiveApp.objects.filter(pk=app.pk).update(shared_with_group=team)
    return app


@pytest.fixture
def quick_lookups(monkeypatch):
    """The proxy re-reads who may open an app every 0.05 s instead of 3 (what these tests wait out)."""
    monkeypatch.setattr(apps, "LOOKUP_S", 0.05)


def unshare(app: InteractiveApp) -> None:
    InteractiveApp.objects.filter(pk=app.pk).update(shared_with_group=None)
    time.sleep(2 * apps.LOOKUP_S)


def test_a_member_of_the_group_opens_the_app_from_the_portal(shared_app, client, other_user, browser_at):
    client.force_login(other_user)
    answer = client.get(f"/apps/{shared_app.slug}/open/")
    assert answer.status_code == 302
    ticket = parse_qs(urlsplit(answer["Location"]).query)["ticket"][0]
    browser = browser_at(shared_app)
    signed_in = browser.get(f"{passes.SIGN_IN_PATH}?ticket={ticket}")
    assert signed_in.status_code == 303
    browser.cookie = signed_in.headers["Set-Cookie"].split(";")[0]
    assert browser.get("/echo").status_code == 200


def test_the_open_view_refuses_a_user_outside_the_group(shared_app, client, stranger):
    client.force_login(stranger)
    answer = client.get(f"/apps/{shared_app.slug}/open/")
    assert answer.status_code == 403 and b"data-app-refused" in answer.content


def test_the_proxy_refuses_a_ticket_of_a_user_outside_the_group(shared_app, browser_at, stranger):
    ticket = passes.ticket_for(shared_app.slug, stranger.pk)
    assert browser_at(shared_app).get(f"{passes.SIGN_IN_PATH}?ticket={ticket}").status_code == 403


def test_the_proxy_refuses_a_session_cookie_of_a_user_outside_the_group(shared_app, browser_at, stranger, upstream):
    browser = browser_at(shared_app)
    browser.cookie = f"{passes.SESSION_COOKIE}={passes.session_value(passes.Pass(shared_app.slug, stranger.pk))}"
    before = len(upstream.seen)
    assert browser.get("/echo").status_code == 302
    assert browser.request("POST", "/echo", origin=browser.origin, data=b"x").status_code == 403
    with pytest.raises(InvalidStatus):
        asyncio.run(_open_socket(browser))
    assert len(upstream.seen) == before


def test_a_member_is_refused_once_the_owner_unshares(shared_app, browser_at, other_user, quick_lookups):
    browser = browser_at(shared_app, other_user)
    assert browser.get("/echo").status_code == 200
    unshare(shared_app)
    assert browser.get("/echo").status_code == 302
    assert browser.request("POST", "/echo", origin=browser.origin, data=b"x").status_code == 403


def test_a_member_is_refused_once_they_leave_the_group(shared_app, browser_at, other_user, team, quick_lookups):
    browser = browser_at(shared_app, other_user)
    assert browser.get("/echo").status_code == 200
    team.user_set.remove(other_user)
    time.sleep(2 * apps.LOOKUP_S)
    assert browser.get("/echo").status_code == 302


def test_a_members_open_websocket_is_closed_once_the_owner_unshares(shared_app, browser_at, other_user, quick_lookups):
    browser = browser_at(shared_app, other_user)

    async def talk_then_lose_it() -> int | None:
        async with await _open_socket(browser) as socket_:
            await socket_.send("hello")
            assert await asyncio.wait_for(socket_.recv(), 10) == "echo:hello"
            await asyncio.to_thread(unshare, shared_app)
            with pytest.raises(ConnectionClosed):
                while True:
                    await asyncio.wait_for(socket_.recv(), 10)
            return socket_.close_code

    assert asyncio.run(talk_then_lose_it()) == 4403


def test_an_admin_still_may_not_open_someone_elses_shared_app(shared_app, client, admin_user):
    client.force_login(admin_user)
    assert client.get(f"/apps/{shared_app.slug}/open/").status_code == 403


async def _open_socket(browser) -> websockets.ClientConnection:
    return await websockets.connect(
        f"ws://{browser.host}/ws",
        origin=browser.origin,
        additional_headers={"Cookie": browser.cookie},
        subprotocols=[Subprotocol("v1.test")],
        host="127.0.0.1",
        port=urlsplit(browser.base).port,
    )
