"""Who may open a terminal websocket: the job's owner and admins, from the portal's own pages."""

import asyncio

import pytest

from tests.ssh.websocket import communicator, read_until_closed, session_cookie, socket_path

pytestmark = pytest.mark.django_db(transaction=True)


def handshake(path, **kwargs):
    async def go():
        comm = communicator(path, **kwargs)
        connected, code = await comm.connect(timeout=5)
        await comm.disconnect()
        return connected, code

    return asyncio.run(go())


def test_it_refuses_a_websocket_without_a_session(make_job):
    assert handshake(socket_path(make_job())) == (False, 4403)


def test_it_refuses_a_foreign_origin(make_job, user):
    job = make_job()
    connected, _ = handshake(socket_path(job), cookie=session_cookie(user), origin=b"http://evil.example")
    assert connected is False


def test_it_refuses_an_origin_that_differs_only_in_port(make_job, user):
    job = make_job()
    connected, _ = handshake(socket_path(job), cookie=session_cookie(user), origin=b"http://127.0.0.1:20002")
    assert connected is False


def test_it_refuses_an_origin_that_differs_only_in_scheme(make_job, user):
    job = make_job()
    connected, _ = handshake(socket_path(job), cookie=session_cookie(user), origin=b"https://127.0.0.1:8000")
    assert connected is False


def test_it_accepts_a_trusted_origin_on_another_port(make_job, user, settings):
    settings.CSRF_TRUSTED_ORIGINS = ["http://127.0.0.1:9000"]
    job = make_job()
    assert handshake(socket_path(job), cookie=session_cookie(user), origin=b"http://127.0.0.1:9000")[0] is True


def test_it_refuses_a_websocket_without_an_origin(make_job, user):
    connected, _ = handshake(socket_path(make_job()), cookie=session_cookie(user), origin=None)
    assert connected is False


def test_it_answers_4404_to_another_user(make_job, other_user):
    assert handshake(socket_path(make_job()), cookie=session_cookie(other_user)) == (False, 4404)


def test_it_answers_4404_for_a_task_the_job_does_not_have(make_job, user):
    assert handshake(socket_path(make_job(), index=3), cookie=session_cookie(user)) == (False, 4404)


def test_it_tells_the_owner_when_the_task_is_not_running(make_job, user):
    job = make_job()
    cookie = session_cookie(user)

    async def go():
        comm = communicator(socket_path(job), cookie=cookie)
        connected, _ = await comm.connect(timeout=5)
        assert connected
        return await read_until_closed(comm)

    output, code = asyncio.run(go())
    assert b"is not running (waiting)" in output
    assert code == 4410
