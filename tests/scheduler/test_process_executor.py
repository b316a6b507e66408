"""The process executor runs a task as a local process group and reads its exit back."""

import os
import random
import signal
import stat
import subprocess
import time
import uuid
from pathlib import Path

import pytest

from clusters.executors.base import ExecutorError, Failure
from clusters.executors.logcap import was_cut
from clusters.executors.process import STOP_GRACE_S, ProcessExecutor
from clusters.executors.sandbox import Sandbox
from clusters.executors.supervise import parents_first, proc_stat
from tests.conftest import processes_running, require
from tests.exposure import echo_hash_of, processes_showing, sha256_of


@pytest.fixture
def executor(process_work_root):
    return ProcessExecutor(process_work_root)


def wait_for_exit(executor, handle, timeout=10.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        status = executor.poll(handle)
        if not status.running:
            return status
        time.sleep(0.02)
    raise AssertionError("the task did not exit in time")


def test_it_runs_the_command_with_the_runtime_environment(executor, make_launch):
    launch = make_launch('echo "job=$PAI_JOB_NAME"')
    status = wait_for_exit(executor, executor.start(launch))
    assert status.exit_code == 0
    assert "job=demo" in launch.log_path.read_text()


def test_it_records_the_users_exit_code(executor, make_launch):
    status = wait_for_exit(executor, executor.start(make_launch("exit 3")))
    assert status.exit_code == 3


def test_it_hides_the_command_variable_from_the_task(executor, make_launch):
    launch = make_launch("env")
    wait_for_exit(executor, executor.start(launch))
    assert "PAI_PORTAL_COMMAND" not in launch.log_path.read_text()


@pytest.fixture(params=["sandboxed", "unsandboxed"])
def any_executor(request, process_work_root):
    """A sandboxed executor, or one on a node without a sandbox (which runs admins' tasks only)."""
    if request.param == "sandboxed":
        return ProcessExecutor(process_work_root), {}
    return ProcessExecutor(process_work_root, sandbox=Sandbox(bwrap="/nonexistent/bwrap")), {"owner_is_admin": True}


def test_it_shows_the_rendered_script_in_no_process_list(any_executor, make_launch):
    executor, owner = any_executor
    secret = f"s3cret-{uuid.uuid4().hex}"
    handle = executor.start(make_launch(f"{echo_hash_of(secret)}; sleep 301.4; echo slept", **owner))
    wait_for(lambda: processes_running("sleep", "301.4"))
    try:
        assert processes_showing(secret) == []
    finally:
        executor.stop(handle)


def test_the_task_still_runs_the_rendered_script(executor, make_launch):
    secret = f"s3cret-{uuid.uuid4().hex}"
    launch = make_launch(echo_hash_of(secret))
    assert wait_for_exit(executor, executor.start(launch)).exit_code == 0
    assert sha256_of(secret) in launch.log_path.read_text()


def test_it_writes_the_script_nowhere(executor, make_launch, tmp_path, process_work_root):
    secret = f"s3cret-{uuid.uuid4().hex}"
    handle = executor.start(make_launch(f"{echo_hash_of(secret)}; sleep 301.5; echo slept"))
    wait_for(lambda: processes_running("sleep", "301.5"))
    try:
        files = [path for root in (tmp_path, process_work_root) for path in root.rglob("*") if path.is_file()]
        holding = [path for path in files if secret.encode() in path.read_bytes()]
        assert holding == []
    finally:
        executor.stop(handle)


def test_it_leaves_no_descriptor_of_the_script_to_the_tasks_processes(executor, make_launch):
    launch = make_launch("ls /proc/self/fd")
    wait_for_exit(executor, executor.start(launch))
    assert launch.log_path.read_text().split() == ["0", "1", "2", "3"]  # (3: ls's own listing)


def test_it_keeps_the_log_to_the_portal_even_under_a_wide_umask(make_launch, tmp_path):
    # A work root of its own, so a supervisor server of its own, started under the wide umask: a
    # server's supervisors write with the umask it was started with (the worker's shared one: 0o077).
    executor = ProcessExecutor(tmp_path / "work")
    launch = make_launch("echo printed", log_path=tmp_path / "logs" / "job-7" / "1" / "worker-0.log")
    old = os.umask(0o022)
    try:
        wait_for_exit(executor, executor.start(launch))
    finally:
        os.umask(old)
    assert stat.S_IMODE(launch.log_path.stat().st_mode) == 0o600
    for directory in (tmp_path / "logs", tmp_path / "logs" / "job-7", launch.log_path.parent):
        assert stat.S_IMODE(directory.stat().st_mode) == 0o700


def test_it_passes_secret_env_without_logging_it(executor, make_launch):
    launch = make_launch('test "$TOKEN" = s3cret', secret_env={"TOKEN": "s3cret"})
    status = wait_for_exit(executor, executor.start(launch))
    assert status.exit_code == 0
    assert "s3cret" not in launch.log_path.read_text()


def wait_for(condition, timeout=10.0):
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.02)


def test_it_stops_every_process_of_the_task(executor, make_launch):
    handle = executor.start(make_launch("sleep 301.1 & wait"))
    wait_for(lambda: processes_running("sleep", "301.1"))
    executor.stop(handle)
    assert processes_running("sleep", "301.1") == []
    assert executor.list_running() == []


def test_it_stops_a_setsid_child_too(executor, make_launch):
    handle = executor.start(make_launch("setsid sleep 301.2 & sleep 301.3"))
    wait_for(lambda: processes_running("sleep", "301.2") and processes_running("sleep", "301.3"))
    executor.stop(handle)
    assert processes_running("sleep", "301.2") == []
    assert processes_running("sleep", "301.3") == []


def test_it_stops_a_task_stopped_while_its_sandbox_starts_without_waiting_out_the_grace(executor, make_launch):
    # Stopped at once, before its command runs: the command's process, born after the SIGTERM,
    # gets its own (it took the whole grace and a SIGKILL, STOP_GRACE_S, before).
    for index in range(3):
        handle = executor.start(make_launch(f"sleep 301.{index + 4}", job_id=100 + index))
        began = time.monotonic()
        executor.stop(handle)
        assert time.monotonic() - began < STOP_GRACE_S - 1
        assert processes_running("sleep", f"301.{index + 4}") == []


def test_it_lets_a_stopped_task_finish_cleanly_within_its_grace(executor, make_launch):
    launch = make_launch("trap 'echo cleaned up; exit 0' TERM; sleep 301.7 & wait")
    handle = executor.start(launch)
    wait_for(lambda: processes_running("sleep", "301.7"))
    executor.stop(handle, keep=True)
    assert executor.poll(handle).exit_code == 0
    assert "cleaned up" in launch.log_path.read_text()


@pytest.fixture(params=["cgroup", "no cgroup"])
def either_limits(request, process_work_root):
    """An executor whose tasks run in a cgroup (where it can make one), or under rlimits (as on a
    Slurm node): the supervisor finds the task's processes by their cgroup, or by their parents."""
    executor = ProcessExecutor(process_work_root, use_cgroups=request.param == "cgroup")
    if request.param == "cgroup":
        require(executor.cgroups is not None, "writable cgroup v1 controllers")
    return executor


def test_it_never_signals_what_a_stopped_tasks_trap_starts(either_limits, make_launch):
    # A program the trap starts to save the task's work runs to its end: it was killed at once by a
    # SIGTERM of its own (rc 143), or, without a cgroup, the sandbox died with its signalled bwrap.
    # (Its own sleep's length: another test's task, or this one's other variant on the other
    # worker, could run a `sleep 305.1` meanwhile.)
    seconds = f"305.{random.randrange(1000, 10000)}"
    launch = make_launch(f"trap 'sleep 0.7; echo \"saved rc=$?\"; exit 0' TERM; echo started; sleep {seconds} & wait")
    handle = either_limits.start(launch)
    wait_for(lambda: processes_running("sleep", seconds))
    either_limits.stop(handle, keep=True)
    assert either_limits.poll(handle).exit_code == 0
    assert "saved rc=0" in launch.log_path.read_text()
    assert processes_running("sleep", seconds) == []


def test_it_signals_a_tasks_processes_parents_first():
    # bash (5.2) loses a trapped SIGTERM that comes just after the child it waits for died of one:
    # `wait` returns 0 and the script goes on (about 1 run in 14 under load, children first).
    shell = subprocess.Popen(["bash", "-c", "sleep 301.9 & (sleep 301.6 & wait) & wait"], start_new_session=True)
    try:
        wait_for(lambda: len(processes_running("sleep", "301.9") + processes_running("sleep", "301.6")) == 2)
        family = {shell.pid, *descendants(shell.pid)}
        assert len(family) == 4
        ordered = parents_first(family)
        assert ordered[0] == shell.pid
        assert all(ordered.index(parent_of(pid)) < ordered.index(pid) for pid in family - {shell.pid})
    finally:
        os.killpg(shell.pid, signal.SIGKILL)
        shell.wait()


def descendants(pid: int) -> list[int]:
    children = [int(child) for child in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]
    return children + [grandchild for child in children for grandchild in descendants(child)]


def parent_of(pid: int) -> int:
    return int(proc_stat(pid)[1])


def test_it_kills_a_task_that_ignores_sigterm_once_its_grace_is_over(executor, make_launch, monkeypatch):
    monkeypatch.setattr("clusters.executors.process.STOP_GRACE_S", grace_s := 0.1)
    handle = executor.start(make_launch("trap '' TERM; sleep 301.8"))
    wait_for(lambda: processes_running("sleep", "301.8"))
    began = time.monotonic()
    executor.stop(handle, keep=True)
    assert time.monotonic() - began >= grace_s
    assert processes_running("sleep", "301.8") == []
    assert executor.poll(handle).exit_code == 128 + 9


def test_it_reads_an_exit_back_after_a_restart(executor, make_launch, process_work_root):
    handle = executor.start(make_launch("exit 5"))
    wait_for_exit(executor, handle)
    restarted = ProcessExecutor(process_work_root)
    assert restarted.poll(handle).exit_code == 5


def test_it_lists_running_tasks_with_their_labels(executor, make_launch, process_work_root):
    handle = executor.start(make_launch("sleep 30"))
    restarted = ProcessExecutor(process_work_root)
    listed = restarted.list_running()
    assert [r.handle.executor_id for r in listed] == [handle.executor_id]
    assert listed[0].labels["pai.role"] == "worker"
    assert restarted.poll(handle).running
    executor.stop(handle)


def test_it_reports_a_signal_kill_as_128_plus_the_signal(executor, make_launch):
    status = wait_for_exit(executor, executor.start(make_launch("kill -TERM $$")))
    assert status.exit_code == 143


def test_it_refuses_a_users_task_where_no_sandbox_can_be_had(make_launch, process_work_root):
    executor = ProcessExecutor(process_work_root, sandbox=Sandbox(bwrap="/nonexistent/bwrap"))
    with pytest.raises(ExecutorError, match=r"cannot sandbox tasks.*bubblewrap") as refused:
        executor.start(make_launch("true"))
    assert refused.value.failure == Failure.START_PERMISSION_DENIED


def test_it_still_runs_an_admins_task_where_no_sandbox_can_be_had(make_launch, process_work_root):
    executor = ProcessExecutor(process_work_root, sandbox=Sandbox(bwrap="/nonexistent/bwrap"))
    status = wait_for_exit(executor, executor.start(make_launch("true", owner_is_admin=True)))
    assert status.exit_code == 0


def test_it_reports_an_out_of_memory_kill(executor, make_launch):
    require(executor.cgroups is not None, "writable cgroup v1 controllers")
    hog = "python3 -c 'blocks = [bytearray(1024 * 1024) for _ in range(400)]'"
    status = wait_for_exit(executor, executor.start(make_launch(hog, memory_mb=100)))
    assert status.oom_killed
    said = str(status.diagnostics)
    assert "out of memory" in said and "100 MB" in said


def test_it_limits_memory_with_rlimits_without_cgroups(make_launch, process_work_root):
    executor = ProcessExecutor(process_work_root, use_cgroups=False)
    hog = "python3 -c 'blocks = [bytearray(1024 * 1024) for _ in range(400)]'"
    launch = make_launch(hog, memory_mb=100)
    status = wait_for_exit(executor, executor.start(launch))
    assert status.exit_code == 1
    assert "MemoryError" in launch.log_path.read_text()


def test_it_limits_the_number_of_processes(make_launch, process_work_root):
    executor = ProcessExecutor(process_work_root, pids_limit=20)
    spawner = 'python3 -c \'import subprocess; [subprocess.Popen(["sleep", "303.1"]) for _ in range(40)]\''
    launch = make_launch(spawner)
    status = wait_for_exit(executor, executor.start(launch))
    assert status.exit_code == 1
    assert "Resource temporarily unavailable" in launch.log_path.read_text()
    assert processes_running("sleep", "303.1") == []


def test_it_gives_the_task_its_cpus_as_a_quota(executor, make_launch):
    require(executor.cgroups is not None, "writable cgroup v1 controllers")
    handle = executor.start(make_launch("sleep 303.2", cpu=2))
    wait_for(lambda: processes_running("sleep", "303.2"))
    pid = processes_running("sleep", "303.2")[0]
    lines = Path(f"/proc/{pid}/cgroup").read_text().splitlines()
    cpu_group = Path("/sys/fs/cgroup/cpu" + next(line.split(":", 2)[2] for line in lines if ":cpu:" in line))
    quota = int((cpu_group / "cpu.cfs_quota_us").read_text())
    period = int((cpu_group / "cpu.cfs_period_us").read_text())
    executor.stop(handle)
    assert quota == 2 * period


def test_it_keeps_the_tail_of_a_log_over_the_cap(make_launch, process_work_root):
    executor = ProcessExecutor(process_work_root, log_max_bytes=64 * 1024)
    launch = make_launch("seq 1 100000; echo the-last-line")
    wait_for_exit(executor, executor.start(launch))
    log = launch.log_path.read_bytes()
    assert len(log) <= 64 * 1024
    assert log.endswith(b"99999\n100000\nthe-last-line\n")
    assert was_cut(launch.log_path)


def test_it_adopts_an_attempt_that_was_started_already(executor, make_launch):
    launch = make_launch("sleep 303.4")
    first = executor.start(launch)
    wait_for(lambda: processes_running("sleep", "303.4"))
    again = executor.start(launch)  # the scheduler died before recording the first start
    assert again.executor_id == first.executor_id
    assert len(processes_running("sleep", "303.4")) == 1
    executor.stop(first)


def test_it_covers_the_portals_paths_before_mounting_the_tasks_own(make_launch, tmp_path):
    portal = tmp_path / "portal"
    sandbox = Sandbox(hidden=(str(portal),))
    launch = make_launch("true", work_dir=portal / "work" / "worker-0")
    argv = sandbox.argv(launch, tmp_path / "passwd", tmp_path / "group", ["true"])
    covered_at = argv.index(str(portal))
    assert argv[covered_at - 1] == "--tmpfs"
    assert argv.index(str(launch.work_dir)) > covered_at  # the work dir is mounted over the cover
