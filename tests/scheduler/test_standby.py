"""A standby scheduler on another machine (PAI_MACHINE_NAME) takes over from the active one killed
with SIGKILL mid-work within the lease's time plus one pass (≤ 10 s), starts no task twice and
carries out a stop asked while no scheduler was active."""

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from clusters.models import Node
from jobs.actions import stop_job, submit_job
from jobs.models import Job, JobState, Task, TaskAttempt
from jobs.states import FINISHED_JOB_STATES
from scheduling.lease import Holder
from tests.conftest import processes_running
from tests.processes import stop
from tests.scheduler.conftest import role, v2_job
from tests.scheduler.test_lease import lease_holder, wait_for_holder
from tests.scheduler.test_two_schedulers import database_env

ROOT = Path(__file__).resolve().parents[2]
TAKEOVER_LIMIT_S = 10.0


def wait_until(condition, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() >= deadline:
            pytest.fail(f"timed out; the jobs: {jobs_now()}; the lease held by: {lease_holder()!r}")
        time.sleep(0.05)


def jobs_now() -> list[tuple]:
    """Each job's state and reason, and its tasks' states and starts: what a timeout explains by."""
    return [
        (job.name, job.state, job.pending_reason, list(job.tasks.values_list("state", "executor_id", "exit_code")))
        for job in Job.objects.all()
    ]


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_it_hands_the_work_to_a_standby_on_another_machine_within_10_s_of_a_sigkill(user, default_vc, tmp_path):
    Node.objects.create(name="local", executor="process", cpus=16, memory_mb=32768)
    # Each start appends a line to a file in the owner's storage area: a task started twice says so.
    marks = tmp_path / "fs" / user.username / "marks"
    mark = (
        "mkdir -p $PAI_DEFAULT_FS_URI/marks; "
        "echo started >> $PAI_DEFAULT_FS_URI/marks/$PAI_JOB_NAME-$PAI_CURRENT_TASK_ROLE_CURRENT_TASK_INDEX"
    )
    env = {
        **os.environ,
        **database_env(),
        "PAI_WORK_ROOT": str(tmp_path / "work"),
        "PAI_LOG_DIR": str(tmp_path / "logs"),
        "PAI_FS_ROOT": str(tmp_path / "fs"),
        "PAI_LOG_LEVEL": "WARNING",
        "PAI_GRACE_SECONDS": "2",
    }
    command = [sys.executable, "manage.py", "runscheduler"]  # as the Procfile starts it (no --id)
    active = subprocess.Popen(command, cwd=ROOT, env={**env, "PAI_MACHINE_NAME": "machine-a"})
    standby = None
    try:
        killed = wait_for_holder(other_than="")
        standby = subprocess.Popen(command, cwd=ROOT, env={**env, "PAI_MACHINE_NAME": "machine-b"})
        long = submit_job(user, v2_job("long", role("worker", f"{mark}; sleep 600.7")))
        short = [submit_job(user, v2_job(f"short-{i}", role("worker", f"{mark}; sleep 2", 2))) for i in range(4)]
        # Mid-work: every task has started (its mark written), none has ended.
        wait_until(lambda: marks.is_dir() and len(list(marks.iterdir())) == 9)
        active.send_signal(signal.SIGKILL)
        active.wait()
        killed_at = time.monotonic()
        stop_job(long, by=user)  # asked while no scheduler is active
        submit_job(user, v2_job("late", role("worker", f"{mark}; sleep 0.2")))

        holder = Holder.parse(wait_for_holder(other_than=killed))
        took = time.monotonic() - killed_at
        assert holder is not None and holder.host == "machine-b"
        assert took <= TAKEOVER_LIMIT_S, f"the standby took over after {took:.1f} s"
        wait_until(lambda: not Job.objects.exclude(state__in=FINISHED_JOB_STATES).exists())
    finally:
        for process in (active, standby):
            if process is not None:
                stop(process)
        for pid in processes_running("sleep", "600.7"):  # (left running when the test failed before its stop)
            os.kill(pid, signal.SIGKILL)

    states = dict(Job.objects.values_list("name", "state"))
    assert states == {"long": JobState.STOPPED, "late": JobState.SUCCEEDED} | {
        job.name: JobState.SUCCEEDED for job in short
    }
    assert {path.name: path.read_text() for path in marks.iterdir()} == {
        "long-0": "started\n",
        "late-0": "started\n",
    } | {f"{job.name}-{index}": "started\n" for job in short for index in range(2)}
    assert TaskAttempt.objects.count() == Task.objects.count() == 10  # one attempt each
