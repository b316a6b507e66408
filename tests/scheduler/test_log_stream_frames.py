"""A followed container log's bytes as the engine sends them (a chunked body of multiplexed, timed
frames) become the task's log files: each stream apart, no line twice when the stream is opened
again from its last line's time. (The real engine: tests/docker/test_log_follow.py.)"""

import asyncio

from clusters.executors.docker_logs import LogStream, TaskFiles, nanoseconds
from clusters.executors.engine_streams import Dechunked
from clusters.executors.logcap import ALL, STDERR, STDOUT, stream_log_path

T1, T2, T3 = b"2026-05-01T10:00:00.000000001Z", b"2026-05-01T10:00:00.000000002Z", b"2026-05-01T10:00:01.5Z"


def frame(stream: int, stamp: bytes, line: bytes) -> bytes:
    payload = stamp + b" " + line
    return bytes([stream, 0, 0, 0]) + len(payload).to_bytes(4, "big") + payload


def chunked(*parts: bytes) -> bytes:
    return b"".join(f"{len(part):x}\r\n".encode() + part + b"\r\n" for part in parts) + b"0\r\n\r\n"


def written(tmp_path, *reads: list[bytes]) -> dict[str, str]:
    """The log files after each read's frames were written (a stream opened again between reads)."""
    log_path = tmp_path / "task.log"

    async def follow() -> None:
        stream = LogStream(("/nowhere.sock", 0), "c0ffee", TaskFiles(log_path, 1 << 20, truncate=True))
        for frames in reads:
            stream.skip = stream.at_last  # (as _read does on each opening)
            assert stream._write(b"".join(frames)) == b""
        stream.files.close()

    asyncio.run(follow())
    return {name: stream_log_path(log_path, name).read_text() for name in (STDOUT, STDERR, ALL)}


def test_it_reads_a_chunked_body_fed_in_pieces_of_any_size():
    body = chunked(b"hello ", b"world", b"!" * 300)
    dechunked = Dechunked()
    data = b"".join(dechunked.feed(body[at : at + 1]) for at in range(len(body)))
    assert data == b"hello world" + b"!" * 300
    assert dechunked.ended


def test_it_keeps_the_streams_apart_and_both_in_order(tmp_path):
    logs = written(tmp_path, [frame(1, T1, b"out-1\n"), frame(2, T2, b"err-1\n"), frame(1, T3, b"out-2\n")])
    assert logs == {STDOUT: "out-1\nout-2\n", STDERR: "err-1\n", ALL: "out-1\nerr-1\nout-2\n"}


def test_it_writes_no_line_twice_when_the_stream_is_opened_again_from_the_last_lines_time(tmp_path):
    first = [frame(1, T1, b"one\n"), frame(1, T2, b"two\n"), frame(1, T2, b"two-again\n")]
    again = [frame(1, T2, b"two\n"), frame(1, T2, b"two-again\n"), frame(1, T3, b"three\n")]  # since=T2: inclusive
    assert written(tmp_path, first, again)[ALL] == "one\ntwo\ntwo-again\nthree\n"


def test_it_reads_the_engines_line_time_to_the_nanosecond():
    assert nanoseconds(T2) - nanoseconds(T1) == 1
    assert nanoseconds(T3) - nanoseconds(T1) == 1_499_999_999
    assert nanoseconds(b"not a time") == 0
