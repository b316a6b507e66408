"""A node port another program holds (no task of the portal's) fails the start of a task given it
as a port conflict: the job is placed again, free of the user's retries, and the scheduler keeps
that port out of the node's placement for a while, so the next attempt gets other ports."""

import socket
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from clusters.executors.process import ProcessExecutor
from clusters.executors.registry import executor_for
from jobs.models import Job
from tests.conftest import require
from tests.scheduler.conftest import role, v2_job


@pytest.fixture
def held_port(process_node) -> Iterator[int]:
    """The first port of the process node's range, held by a plain listening socket."""
    executor = executor_for("process", process_node.address)
    assert isinstance(executor, ProcessExecutor)
    require(not executor.sandbox_problem, f"a sandbox with a network of its own ({executor.sandbox_problem})")
    with socket.socket() as holder:
        holder.bind((process_node.address, process_node.port_range_start))
        holder.listen(1)
        yield process_node.port_range_start


@pytest.fixture
def run_until_ran(scheduler):
    def run(job: Job, timeout: float = 30.0) -> Job:
        """Scheduler passes until the job's task has run its command (it says so)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            scheduler.run_once()
            job.refresh_from_db()
            task = job.tasks.get()
            log = Path(task.log_path) if task.executor_id and task.log_path else None
            if log is not None and log.is_file() and "command-ran" in log.read_text(errors="replace"):
                return job
            time.sleep(0.02)
        raise AssertionError(f"job {job.state} at attempt {job.job_attempt}: {job.exit_diagnostics!r}")

    return run


def ports_of(job: Job) -> set[int]:
    return {port for task in job.tasks.all() for numbers in task.ports.values() for port in numbers}


def test_it_starts_a_job_on_other_ports_than_one_another_program_holds(submit, run_until_ran, held_port):
    job = run_until_ran(submit(v2_job("held", role("worker", "echo command-ran; sleep 30"))))
    assert held_port not in ports_of(job)
    assert job.job_attempt <= 2 and job.retries_used == 0  # (at the first retry at the latest, and free)


def test_it_starts_a_job_on_other_ports_when_its_network_found_one_held(submit, run_until_ran, held_port, monkeypatch):
    """Taken between the start's check and pasta's bind: found by the task's poll, not its start."""
    monkeypatch.setattr(ProcessExecutor, "_check_ports_free", lambda self, launch: None)
    job = run_until_ran(submit(v2_job("held", role("worker", "echo command-ran; sleep 30"))))
    assert held_port not in ports_of(job)
    assert job.job_attempt <= 2 and job.retries_used == 0


def test_it_gives_the_next_job_other_ports_than_those_of_a_task_that_just_ended(submit, run_until_ran, scheduler):
    """The ended task's pasta holds them ~20 ms after its exit is recorded: a start given them
    waited for that (clusters.executors.netns.PORTS_FREED_S)."""
    first = run_until_ran(submit(v2_job("first", role("worker", "echo command-ran"))))
    deadline = time.monotonic() + 30
    while first.state != "SUCCEEDED" and time.monotonic() < deadline:
        scheduler.run_once()
        first.refresh_from_db()
    second = run_until_ran(submit(v2_job("second", role("worker", "echo command-ran; sleep 30"))))
    assert ports_of(first) and not ports_of(first) & ports_of(second)
