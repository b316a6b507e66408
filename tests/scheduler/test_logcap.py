"""A task's log never passes its cap: the newest output stays and the file says it was cut."""

import os
import stat

import pytest

from clusters.executors.logcap import ALL, CUT_NOTE, STDERR, STDOUT, CappedLog, TaskLogs, stream_log_path, was_cut


@pytest.fixture
def path(tmp_path):
    return tmp_path / "task.log"


def test_it_keeps_a_small_log_whole(path):
    with CappedLog(path, 4096) as log:
        log.write(b"hello\n")
    assert path.read_bytes() == b"hello\n"
    assert not was_cut(path)


def test_it_keeps_the_newest_output_under_the_cap(path):
    with CappedLog(path, 4096) as log:
        for number in range(2000):
            log.write(f"line {number}\n".encode())
    text = path.read_bytes()
    assert len(text) <= 4096
    assert text.endswith(b"line 1998\nline 1999\n")


def test_it_says_the_log_was_cut(path):
    with CappedLog(path, 4096) as log:
        log.write(b"x" * 5000)
    assert path.read_bytes().startswith(CUT_NOTE)
    assert was_cut(path)


def test_it_counts_what_was_already_in_the_file(path):
    path.write_bytes(b"y" * 4000)
    with CappedLog(path, 4096) as log:
        log.write(b"z" * 200)
    assert len(path.read_bytes()) <= 4096
    assert path.read_bytes().endswith(b"z" * 200)


def test_it_keeps_stdout_and_stderr_apart_and_together_in_order(path):
    with TaskLogs(path, 4096) as logs:
        logs.write(STDOUT, b"out 1\n")
        logs.write(STDERR, b"err 1\n")
        logs.write(STDOUT, b"out 2\n")
    assert stream_log_path(path, STDOUT).read_bytes() == b"out 1\nout 2\n"
    assert stream_log_path(path, STDERR).read_bytes() == b"err 1\n"
    assert path.read_bytes() == b"out 1\nerr 1\nout 2\n"


def test_it_puts_the_streams_beside_the_log(path):
    assert [stream_log_path(path, stream).name for stream in (STDOUT, STDERR, ALL)] == [
        "task.stdout.log",
        "task.stderr.log",
        "task.log",
    ]


def test_it_caps_each_stream_of_a_task_log(path):
    with TaskLogs(path, 4096) as logs:
        for number in range(2000):
            logs.write(STDERR, f"line {number}\n".encode())
    for stream in (STDERR, ALL):
        assert len(stream_log_path(path, stream).read_bytes()) <= 4096
        assert was_cut(stream_log_path(path, stream))


@pytest.fixture
def wide_umask():
    old = os.umask(0o022)
    yield
    os.umask(old)


def test_it_keeps_a_cut_log_to_the_portal(path, wide_umask):
    with CappedLog(path, 1024) as log:
        for number in range(200):
            log.write(f"line {number}\n".encode())
    assert was_cut(path)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600


def test_it_makes_a_log_written_before_private(path, wide_umask):
    path.write_bytes(b"from before\n")
    path.chmod(0o644)
    CappedLog(path, 4096).close()
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
