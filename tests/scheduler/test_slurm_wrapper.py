"""The Slurm task wrapper (clusters/slurm/task.py) running a process attempt, without Slurm: what
it does with the portal's stop file is on the path of every Stop and time limit on a Slurm VC
without Docker."""

from __future__ import annotations

import json
import time

from clusters.executors.base import TaskHandle
from clusters.executors.slurm import SlurmTaskExecutor, launch_file
from clusters.slurm.task import STOP_FILE, Wrapper


def test_it_records_the_exit_of_an_attempt_stopped_as_it_starts(tmp_path, make_launch):
    # (The stop file there before the attempt starts: the wrapper's SIGTERM reaches the supervisor
    # at once, before it has set its handler. Died of it, it left no exit record, and the portal
    # waited for the whole grace: seen as a 30-s Stop in CI.)
    executor = SlurmTaskExecutor(tmp_path / "work", "127.0.0.1")
    launch = make_launch("sleep 300")
    handle = executor.start(launch)
    task_dir = executor.work_root / handle.executor_id
    (task_dir / STOP_FILE).touch()
    wrapper = Wrapper(str(task_dir.parent), launch.role, launch.index)
    began = time.monotonic()

    wrapper.run_attempt(json.loads(launch_file(task_dir).read_text()))

    status = executor.poll(TaskHandle(handle.executor_id, handle.ip))
    assert (status.running, time.monotonic() - began < 10) == (False, True)
