"""Request bodies are read whole on the event loop before a request thread is taken
(pai_portal.serving.read_body): limits, the total deadline and the cap per client address."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

from pai_portal.serving import SPOOL_BYTES, BodyPolicy, BodyRefused, OneHopWSGIMiddleware, read_body


def scope_with(length: int | None = None, client: str = "10.0.0.1", path: str = "/api/v2/jobs") -> dict[str, Any]:
    headers = [] if length is None else [(b"content-length", str(length).encode())]
    return {"type": "http", "path": path, "headers": headers, "client": (client, 5000)}


def pieces(*parts: bytes, then_wait: bool = False):
    """A receive() that hands out `parts` (the last one ending the body unless then_wait)."""
    queue = list(parts)

    async def receive() -> dict[str, Any]:
        if not queue:
            await asyncio.sleep(3600)
        part = queue.pop(0)
        return {"type": "http.request", "body": part, "more_body": bool(queue) or then_wait}

    return receive


def policy(**overrides: Any) -> BodyPolicy:
    settings: dict[str, Any] = {"limit": lambda path: 1000, "total_timeout": 5, "limit_unit": 1000, "per_client": 2}
    return BodyPolicy(**{**settings, **overrides})


def test_it_reads_a_body_split_over_pieces_whole():
    body, too_large = asyncio.run(read_body(scope_with(), pieces(b"abc", b"def"), policy()))
    assert (body.read(), too_large) == (b"abcdef", 0)


def test_it_marks_a_declared_length_over_the_limit_without_reading():
    # (The client sends it: it is read and dropped so the 413 is heard, not waited for 5 s.)
    body, too_large = asyncio.run(read_body(scope_with(length=5000), pieces(b"x" * 5000), policy()))
    assert (body.read(), too_large) == (b"", 5000)


def test_it_stops_reading_a_chunked_body_past_the_limit():
    body, too_large = asyncio.run(read_body(scope_with(), pieces(b"x" * 600, b"x" * 600, b"never"), policy()))
    assert (body.read(), too_large) == (b"", 1200)


def test_it_refuses_a_body_that_misses_its_total_deadline_with_408():
    async def trickle() -> None:
        receive = pieces(*[b"x"] * 100)

        async def slow() -> dict[str, Any]:
            await asyncio.sleep(0.02)
            return await receive()

        await read_body(scope_with(), slow, policy(total_timeout=0.05))  # (2 s of pieces: never whole in time)

    with pytest.raises(BodyRefused) as refused:
        asyncio.run(trickle())
    assert refused.value.status == 408


def test_it_refuses_more_arriving_bodies_from_one_address_than_the_cap_with_429():
    shared = policy(per_client=2)

    async def three_stalled() -> list[Any]:
        stalled = [asyncio.create_task(read_body(scope_with(), pieces(b"a", then_wait=True), shared)) for _ in range(2)]
        await asyncio.sleep(0.01)  # (the stalled reads run up to their wait first: they are ready before any timer)
        third = await asyncio.gather(
            read_body(scope_with(), pieces(b"a", then_wait=True), shared), return_exceptions=True
        )
        other_address = asyncio.create_task(read_body(scope_with(client="10.0.0.2"), pieces(b"a", b"b"), shared))
        done = await other_address
        for task in stalled:
            task.cancel()
        return [third[0], done]

    third, other = asyncio.run(three_stalled())
    assert isinstance(third, BodyRefused) and third.status == 429
    assert other[0].read() == b"ab"
    assert not shared.arriving


def test_it_keeps_a_big_body_in_a_temporary_file_not_in_memory():
    big = b"y" * (SPOOL_BYTES + 1)
    body, _ = asyncio.run(read_body(scope_with(), pieces(big[:1000], big[1000:]), policy(limit=lambda path: 10**9)))
    assert body._rolled  # type: ignore[attr-defined]
    assert body.read() == big


def test_it_answers_429_from_the_loop_with_code_and_message_and_its_catalogue_code():
    def app(environ, start_response):  # pragma: no cover - never runs
        raise AssertionError("the app ran")

    sent: list[dict[str, Any]] = []
    shared = policy(per_client=1)
    shared.arriving["10.0.0.1"] = 1

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    scope = {**scope_with(), "method": "POST", "http_version": "1.1", "query_string": b"", "root_path": ""}
    asyncio.run(OneHopWSGIMiddleware(app, workers=1, body=shared)(scope, pieces(b"a", then_wait=True), send))
    assert sent[0]["status"] == 429
    answer = json.loads(sent[1]["body"])
    assert answer["code"] == "TooManyRequestsError"
    assert answer["errors"][0]["code"] == "api.body.arriving" and answer["errors"][0]["params"] == {"most": 1}


def test_it_reads_and_drops_a_body_a_little_over_the_limit_so_the_413_is_heard():
    taken: list[int] = []
    receive = pieces(b"x" * 600, b"x" * 600)

    async def counted() -> dict[str, Any]:
        message = await receive()
        taken.append(len(message["body"]))
        return message

    body, too_large = asyncio.run(read_body(scope_with(length=1200), counted, policy()))
    assert (body.read(), too_large) == (b"", 1200)
    assert taken == [600, 600]
