"""A task directory names its supervisor and its pasta by pid and start time (record_process): the
executor asks whether that very process still runs on every poll, and ends a pasta only if so."""

import subprocess
import time
from collections.abc import Iterator

import pytest

from clusters.executors.supervise import proc_stat, record_process, recorded_process, start_time


@pytest.fixture
def sleeper() -> Iterator[subprocess.Popen[bytes]]:
    process = subprocess.Popen(["sleep", "60"])
    yield process
    process.kill()
    process.wait()


def test_it_names_a_recorded_process_while_it_runs(sleeper, tmp_path):
    record_process(str(tmp_path / "pid"), sleeper.pid)
    assert recorded_process(tmp_path / "pid") == sleeper.pid


def test_it_does_not_take_another_process_given_the_recorded_pid_for_the_recorded_one(sleeper, tmp_path):
    """Pids are reused: the process found under the recorded pid started at another time."""
    (tmp_path / "pid").write_text(f"{sleeper.pid} {int(start_time(sleeper.pid)) - 1}")
    assert recorded_process(tmp_path / "pid") is None


def test_it_counts_a_recorded_process_that_ended_as_gone(sleeper, tmp_path):
    record_process(str(tmp_path / "pid"), sleeper.pid)
    sleeper.kill()
    sleeper.wait()
    assert recorded_process(tmp_path / "pid") is None


def test_it_counts_a_recorded_process_that_ended_unreaped_as_gone(sleeper, tmp_path):
    """A zombie: the supervisor killed, its parent not having waited for it yet."""
    record_process(str(tmp_path / "pid"), sleeper.pid)
    sleeper.kill()
    while proc_stat(sleeper.pid)[0] != "Z":
        time.sleep(0.01)
    assert recorded_process(tmp_path / "pid") is None
