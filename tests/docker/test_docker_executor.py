"""The Docker executor against a real engine: one container per task on a per-job network."""

import contextlib
import io
import re
import socket
import tarfile
import time
import uuid

import pytest

from clusters.executors.base import ExecutorError, Failure
from clusters.executors.docker import DockerExecutor
from clusters.executors.logcap import ALL, STDERR, STDOUT, stream_log_path, was_cut
from jobs.storage import areas as storage
from tests.conftest import processes_running
from tests.docker.conftest import docker_cli, remove_namespace
from tests.exposure import echo_hash_of, processes_showing, sha256_of, shared_files_holding
from tests.factories import partial_spec

pytestmark = [pytest.mark.docker, pytest.mark.django_db]


def start_job(executor, launch_for, tasks, **fields):
    """prepare_job + start every (role, index, command) in order; returns handles by hostname."""
    ips = executor.prepare_job(launch_for().job_id, "alice~test-job", [(r, i) for r, i, _ in tasks], "127.0.0.1")
    handles = {}
    for role, index, command in tasks:
        launch = launch_for(role, index, command, ip=ips[(role, index)], **fields)
        handles[f"{role}-{index}"] = executor.start(launch)
    return handles


def log_of(launch_for, hostname: str) -> str:
    role, index = hostname.rsplit("-", 1)
    return launch_for(role, int(index)).log_path.read_text()


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def test_it_runs_a_task_and_reads_back_its_exit_code(executor, launch_for, wait_exit):
    handles = start_job(executor, launch_for, [("worker", 0, "echo hello; exit 3")])
    status = wait_exit(handles["worker-0"])
    assert (status.exit_code, status.oom_killed, status.lost) == (3, False, False)
    assert status.started_at is not None and status.finished_at >= status.started_at
    assert "hello" in log_of(launch_for, "worker-0")


BOTH_STREAMS = "echo out-1; echo err-1 >&2; sleep 0.3; echo out-2; sleep 0.3; echo err-2 >&2"


def streams_of(launch_for) -> dict[str, str]:
    log_path = launch_for().log_path
    return {stream: stream_log_path(log_path, stream).read_text() for stream in (STDOUT, STDERR, ALL)}


def test_it_keeps_stdout_stderr_and_both_in_order(executor, launch_for, wait_exit):
    handles = start_job(executor, launch_for, [("worker", 0, BOTH_STREAMS)])
    wait_exit(handles["worker-0"])
    logs = streams_of(launch_for)
    assert (logs[STDOUT], logs[STDERR]) == ("out-1\nout-2\n", "err-1\nerr-2\n")
    merged = logs[ALL].split()
    assert sorted(merged[:2]) == ["err-1", "out-1"]  # written at the same moment: either may come first
    assert merged[2:] == ["out-2", "err-2"]


def test_it_keeps_the_streams_apart_in_the_log_copied_after_a_restart(executor, launch_for, namespace):
    from clusters.executors.docker import DockerExecutor

    handles = start_job(executor, launch_for, [("worker", 0, BOTH_STREAMS)])
    executor.api.wait(handles["worker-0"].executor_id, timeout=30)
    for stream in (STDOUT, STDERR, ALL):
        stream_log_path(launch_for().log_path, stream).unlink()
    assert DockerExecutor(namespace=namespace).poll(handles["worker-0"]).exit_code == 0
    assert streams_of(launch_for)[STDERR] == "err-1\nerr-2\n"
    assert streams_of(launch_for)[STDOUT] == "out-1\nout-2\n"


def test_it_streams_the_log_while_the_task_runs(executor, launch_for, wait_exit):
    handles = start_job(executor, launch_for, [("worker", 0, "echo first; sleep 3; echo second")])
    log_path = launch_for().log_path
    deadline = time.monotonic() + 10
    while not (log_path.exists() and "first" in log_path.read_text()):
        assert time.monotonic() < deadline, "the log never showed the first line"
        time.sleep(0.1)
    assert executor.poll(handles["worker-0"]).running
    assert "second" not in log_path.read_text()
    wait_exit(handles["worker-0"])
    assert "second" in log_path.read_text()


def shows(log_path, line: str) -> None:
    deadline = time.monotonic() + 10
    while not (log_path.exists() and line in log_path.read_text()):
        assert time.monotonic() < deadline, f"the log never showed {line!r}"
        time.sleep(0.1)


def test_a_new_executor_follows_the_log_of_a_running_task_once_it_lists_it(executor, launch_for, namespace):
    start_job(executor, launch_for, [("worker", 0, "echo first; sleep 30")])
    log_path = launch_for().log_path
    shows(log_path, "first")
    log_path.unlink()  # the scheduler died, and its log thread with it
    DockerExecutor(namespace=namespace).list_running()
    shows(log_path, "first")


def test_it_gives_each_task_its_fixed_address_and_hostname(executor, launch_for, wait_exit):
    handles = start_job(executor, launch_for, [("ps", 0, "hostname; hostname -i")])
    wait_exit(handles["ps-0"])
    assert log_of(launch_for, "ps-0").split() == ["ps-0", handles["ps-0"].ip]


def test_it_resolves_job_mates_by_role_and_index(executor, launch_for, wait_exit):
    handles = start_job(
        executor,
        launch_for,
        [("worker", 1, "sleep 30"), ("ps", 0, "getent hosts worker-1")],
    )
    wait_exit(handles["ps-0"])
    assert log_of(launch_for, "ps-0").split() == [handles["worker-1"].ip, "worker-1"]


def test_it_reaches_another_tasks_advertised_ip_and_port(executor, launch_for, wait_exit):
    port = free_port()
    ips = executor.prepare_job(launch_for().job_id, "alice~test-job", [("ps", 0), ("worker", 0)], "127.0.0.1")
    listen = f"echo pong | nc -l -p {port} -q 1"
    worker = launch_for("worker", 0, listen, ip=ips[("worker", 0)], ports={"grpc": [port]})
    talk = f"for i in $(seq 50); do nc -w 2 {ips[('worker', 0)]} {port} </dev/null && exit 0; sleep 0.1; done; exit 1"
    executor.start(worker)
    handles = {"ps-0": executor.start(launch_for("ps", 0, talk, ip=ips[("ps", 0)]))}
    assert wait_exit(handles["ps-0"]).exit_code == 0
    assert "pong" in log_of(launch_for, "ps-0")


def test_it_publishes_host_ports_on_the_node_address(executor, launch_for):
    port = free_port()
    start_job(executor, launch_for, [("worker", 0, f"echo published | nc -l -p {port}")], ports={"http": [port]})
    deadline = time.monotonic() + 10
    while True:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=2) as conn:
                reply = conn.recv(100)
            if reply:
                break
        except OSError:
            pass
        assert time.monotonic() < deadline, "the published port never answered"
        time.sleep(0.2)
    assert reply == b"published\n"


def test_it_fails_a_taken_host_port_as_a_port_conflict(executor, launch_for):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        with pytest.raises(ExecutorError) as error:
            start_job(executor, launch_for, [("worker", 0, "true")], ports={"http": [port]})
    assert error.value.failure == Failure.PORT_CONFLICT


def test_it_applies_cpu_memory_and_shm_limits(executor, launch_for, wait_exit):
    handles = start_job(executor, launch_for, [("worker", 0, "df -m /dev/shm | tail -1")], memory_mb=300, shm_mb=128)
    wait_exit(handles["worker-0"])
    host_config = executor.api.inspect_container(handles["worker-0"].executor_id)["HostConfig"]
    assert host_config["NanoCpus"] == 1_000_000_000
    assert host_config["Memory"] == 300 * 1024 * 1024
    assert log_of(launch_for, "worker-0").split()[1] == "128"


def test_it_bounds_the_tasks_processes_and_the_engines_log(docker_engine, namespace, launch_for):
    executor = DockerExecutor(namespace=namespace, pids_limit=64, log_max_bytes=32 * 1024 * 1024)
    try:
        handles = start_job(executor, launch_for, [("worker", 0, "sleep 30")])
        host_config = executor.api.inspect_container(handles["worker-0"].executor_id)["HostConfig"]
    finally:
        remove_namespace(executor.api, namespace)
    assert host_config["PidsLimit"] == 64
    assert host_config["LogConfig"] == {"Type": "json-file", "Config": {"max-size": "33554432", "max-file": "2"}}


def test_it_keeps_the_tail_of_a_log_over_the_cap(docker_engine, namespace, launch_for):
    executor = DockerExecutor(namespace=namespace, log_max_bytes=64 * 1024)
    try:
        handles = start_job(executor, launch_for, [("worker", 0, "seq 1 100000; echo the-last-line")])
        deadline = time.monotonic() + 30
        while executor.poll(handles["worker-0"]).running:
            assert time.monotonic() < deadline
            time.sleep(0.1)
    finally:
        remove_namespace(executor.api, namespace)
    log = launch_for().log_path.read_bytes()
    assert len(log) <= 64 * 1024
    assert log.endswith(b"100000\nthe-last-line\n")
    assert was_cut(launch_for().log_path)


def test_it_never_asks_for_gpus_on_a_node_without_them(executor, launch_for, wait_exit):
    handles = start_job(executor, launch_for, [("worker", 0, "echo [$NVIDIA_VISIBLE_DEVICES]")])
    wait_exit(handles["worker-0"])
    assert not executor.api.inspect_container(handles["worker-0"].executor_id)["HostConfig"]["DeviceRequests"]
    assert log_of(launch_for, "worker-0").strip() == "[]"


def test_it_asks_the_engine_for_the_allocated_gpus(executor, launch_for):
    ips = executor.prepare_job(launch_for().job_id, "alice~test-job", [("worker", 0)], "127.0.0.1")
    launch = launch_for("worker", 0, "true", ip=ips[("worker", 0)], gpus=[1, 3], keep_on_failure=True)
    name = executor.container_name(launch)
    with contextlib.suppress(ExecutorError):  # it starts only where the NVIDIA runtime is installed
        executor.start(launch)
    info = executor.api.inspect_container(name)
    assert info["HostConfig"]["DeviceRequests"][0]["DeviceIDs"] == ["1", "3"]
    assert "NVIDIA_VISIBLE_DEVICES=1,3" in info["Config"]["Env"]
    assert "CUDA_VISIBLE_DEVICES=0,1" in info["Config"]["Env"]  # the container numbers its GPUs from 0


def test_it_passes_the_environment_and_secrets_to_the_task(executor, launch_for, wait_exit):
    env = {"PAI_WORK_DIR": "/pai/work", "PAI_JOB_NAME": "test-job"}
    handles = start_job(
        executor, launch_for, [("worker", 0, "echo $PAI_JOB_NAME $TOKEN; pwd")], env=env, secret_env={"TOKEN": "s3"}
    )
    wait_exit(handles["worker-0"])
    assert log_of(launch_for, "worker-0").split() == ["test-job", "s3", "/pai/work"]


def wait_for_process(*argv: str, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while not processes_running(*argv):
        assert time.monotonic() < deadline, f"no process {argv}"
        time.sleep(0.1)


def test_it_shows_the_tasks_script_in_no_host_process_list(executor, launch_for):
    secret = f"s3cret-{uuid.uuid4().hex}"
    handles = start_job(executor, launch_for, [("worker", 0, f"{echo_hash_of(secret)}; sleep 303.1; echo slept")])
    wait_for_process("sleep", "303.1")
    try:
        assert processes_showing(secret) == []
    finally:
        executor.stop(handles["worker-0"])


def test_the_task_still_runs_its_script_with_the_secret(executor, launch_for, wait_exit):
    secret = f"s3cret-{uuid.uuid4().hex}"
    handles = start_job(executor, launch_for, [("worker", 0, echo_hash_of(secret))])
    assert wait_exit(handles["worker-0"]).exit_code == 0
    assert sha256_of(secret) in log_of(launch_for, "worker-0")


def test_it_keeps_the_script_in_the_container_to_root(executor, launch_for):
    handles = start_job(executor, launch_for, [("worker", 0, "sleep 303.2")])
    try:
        owner_and_mode = docker_cli(
            "exec", handles["worker-0"].executor_id, "stat", "-c", "%U %a", "/pai/runtime/command.sh"
        )
        assert owner_and_mode.split() == ["root", "700"]
    finally:
        executor.stop(handles["worker-0"])


def test_it_removes_the_script_from_the_node_with_the_container(executor, launch_for, wait_exit, tmp_path):
    secret = f"s3cret-{uuid.uuid4().hex}"
    handles = start_job(executor, launch_for, [("worker", 0, f"{echo_hash_of(secret)}; echo {secret}")])
    wait_exit(handles["worker-0"])
    executor.stop(handles["worker-0"])
    assert not list(tmp_path.rglob("command.sh"))
    assert shared_files_holding(tmp_path, secret) == []  # (the log holds it as printed: the portal's alone)


def test_removing_a_lost_attempt_leaves_the_script_of_the_next_attempt_of_its_task(executor, launch_for, tmp_path):
    """A lost attempt's container is removed once its node answers again, maybe after the task's
    next attempt started (on another node of the same host, as in a dev cluster): its script goes,
    the next attempt's stays (it went too, and that task exited 127: no command.sh)."""
    lost = start_job(executor, launch_for, [("worker", 0, "sleep 301.1")])["worker-0"]
    started = executor.start(launch_for("worker", 0, "sleep 301.2", job_attempt=2))
    try:
        executor.stop(lost)
        assert [path.parent.name for path in tmp_path.rglob("command.sh")] == ["pai-runtime-2.1"]
    finally:
        executor.stop(started)


def test_it_writes_the_runtime_env_but_no_secret_to_etc_environment(executor, launch_for, wait_exit):
    env = {"PAI_WORK_DIR": "/pai/work", "PAI_JOB_NAME": "test-job"}
    handles = start_job(executor, launch_for, [("worker", 0, "cat /etc/environment")], env=env, secret_env={"T": "s3"})
    wait_exit(handles["worker-0"])
    log = log_of(launch_for, "worker-0")
    assert 'PAI_JOB_NAME="test-job"' in log
    assert "s3" not in log


def test_it_mounts_data_read_only_output_writable_and_code_under_the_work_dir(
    executor, launch_for, wait_exit, settings, tmp_path
):
    settings.PAI_FS_ROOT = tmp_path / "fs"
    area = storage.user_area("alice")
    (area / "data").mkdir()
    (area / "data" / "input.txt").write_text("input\n")
    (area / "code").mkdir()
    (area / "code" / "train.py").write_text("print('training')\n")
    spec = partial_spec(
        extras={
            "v1": {
                "dataDir": "$PAI_DEFAULT_FS_URI/data",
                "outputDir": "$PAI_DEFAULT_FS_URI/Output/test-job",
                "codeDir": "$PAI_DEFAULT_FS_URI/code",
            }
        }
    )
    mounts = storage.launch_mounts("alice", spec, tmp_path / "work" / "code", "/pai/work")
    data, output = f"{area}/data", f"{area}/Output/test-job"
    script = (
        f"cat {data}/input.txt; touch {data}/x 2>/dev/null && echo data-writable;"
        f" echo result > {output}/result.txt && echo output-ok;"
        f" python3 $PAI_WORK_DIR/code/train.py; touch $PAI_WORK_DIR/code/x 2>/dev/null && echo code-writable"
    )
    handles = start_job(executor, launch_for, [("worker", 0, script)], mounts=mounts)
    wait_exit(handles["worker-0"])
    assert log_of(launch_for, "worker-0").split() == ["input", "output-ok", "training"]
    assert (area / "Output" / "test-job" / "result.txt").read_text() == "result\n"


def test_it_reports_out_of_memory_as_137_with_the_oom_flag(executor, launch_for, wait_exit):
    hog = 'python3 -c "blocks = [bytearray(16 * 2**20) for _ in range(64)]"'
    handles = start_job(executor, launch_for, [("worker", 0, hog)], memory_mb=100)
    status = wait_exit(handles["worker-0"])
    assert (status.exit_code, status.oom_killed) == (137, True)
    assert "out of memory" in str(status.diagnostics)


def test_it_fails_a_missing_image_with_254(executor, launch_for):
    with pytest.raises(
        ExecutorError, match=re.escape("pulling image pai-portal/no-such-image:1 from registry docker.io failed")
    ) as error:
        start_job(executor, launch_for, [("worker", 0, "true")], image="pai-portal/no-such-image:1")
    assert error.value.failure == Failure.IMAGE_NOT_FOUND


def test_it_maps_an_image_without_a_shell_to_command_not_found(executor, launch_for, namespace, wait_exit):
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as tar:
        info = tarfile.TarInfo("README")
        info.size = 3
        tar.addfile(info, io.BytesIO(b"hi\n"))
    image = f"pai-portal/{namespace}-noshell:latest"
    executor.api.import_image_from_data(buffer.getvalue(), repository=image)
    try:
        handles = start_job(executor, launch_for, [("worker", 0, "true")], image=image)
        status = wait_exit(handles["worker-0"])
        assert (status.exit_code, status.failure) == (127, Failure.START_COMMAND_NOT_FOUND)
        assert "/bin/sh" in status.diagnostics
    finally:
        executor.api.remove_image(image, force=True)


def test_it_removes_the_container_on_stop(executor, launch_for):
    handles = start_job(executor, launch_for, [("worker", 0, "sleep 30")])
    executor.stop(handles["worker-0"])
    executor.stop(handles["worker-0"])  # idempotent
    status = executor.poll(handles["worker-0"])
    assert status.lost and status.failure == Failure.TASK_GONE


def test_it_keeps_the_container_for_debugging(executor, launch_for, wait_exit):
    handles = start_job(executor, launch_for, [("worker", 0, "exit 1")], keep_on_failure=True)
    wait_exit(handles["worker-0"])
    executor.stop(handles["worker-0"], keep=True)
    executor.cleanup_job(launch_for().job_id, keep=True)
    assert executor.api.inspect_container(handles["worker-0"].executor_id)["State"]["ExitCode"] == 1


def test_it_no_longer_lists_a_kept_container_as_a_task(executor, launch_for, wait_exit):
    handles = start_job(executor, launch_for, [("worker", 0, "exit 1")], keep_on_failure=True)
    wait_exit(handles["worker-0"])
    executor.stop(handles["worker-0"], keep=True)
    assert executor.list_running() == []


def test_it_lists_its_containers_with_their_labels(executor, launch_for):
    handles = start_job(executor, launch_for, [("ps", 0, "sleep 30"), ("worker", 2, "sleep 30")])
    listed = {task.handle.executor_id: task.labels for task in executor.list_running()}
    assert set(listed) == {h.executor_id for h in handles.values()}
    labels = listed[handles["worker-2"].executor_id]
    assert (labels["pai.role"], labels["pai.index"], labels["pai.job"]) == ("worker", "2", "alice~test-job")


def test_it_adopts_the_container_of_a_task_started_before(executor, launch_for):
    first = start_job(executor, launch_for, [("worker", 0, "sleep 30")])["worker-0"]
    again = start_job(executor, launch_for, [("worker", 0, "sleep 30")])["worker-0"]
    assert again.executor_id == first.executor_id
    assert len(executor.list_running()) == 1


def test_it_gives_the_same_addresses_when_a_job_is_prepared_again(executor, launch_for):
    tasks = [("worker", 1), ("ps", 0), ("worker", 0)]
    first = executor.prepare_job(launch_for().job_id, "alice~test-job", tasks, "127.0.0.1")
    assert executor.prepare_job(launch_for().job_id, "alice~test-job", tasks, "127.0.0.1") == first
    assert len(set(first.values())) == 3


def test_it_removes_the_jobs_containers_and_network_on_cleanup(executor, launch_for):
    start_job(executor, launch_for, [("worker", 0, "sleep 30")])
    executor.cleanup_job(launch_for().job_id)
    assert executor.list_running() == []
    assert executor.api.networks(names=[executor.networks.name(launch_for().job_id)]) == []


def test_it_reports_an_unreachable_engine_as_a_lost_node(launch_for):
    from clusters.executors.base import TaskHandle
    from clusters.executors.docker import DockerExecutor

    status = DockerExecutor("unix:///nonexistent/docker.sock").poll(TaskHandle(executor_id="abc"))
    assert status.lost and status.failure == Failure.NODE_LOST


def test_it_copies_the_runtime_into_a_container_on_another_machines_engine(
    executor, launch_for, wait_exit, monkeypatch
):
    monkeypatch.setattr(type(executor), "local_engine", property(lambda self: False))
    handles = start_job(executor, launch_for, [("worker", 0, "echo copied; mount | grep -c /pai/runtime")])
    wait_exit(handles["worker-0"])
    assert log_of(launch_for, "worker-0").split() == ["copied", "0"]


def test_it_says_so_when_the_engine_is_unreachable_at_prepare():
    from clusters.executors.docker import DockerExecutor

    with pytest.raises(ExecutorError, match="could not create the job's network"):
        DockerExecutor("unix:///nonexistent/docker.sock").prepare_job(1, "a~b", [("w", 0)], "127.0.0.1")


def test_a_new_executor_copies_the_whole_log_of_a_task_that_exited_meanwhile(executor, launch_for, namespace):
    from clusters.executors.docker import DockerExecutor

    handles = start_job(executor, launch_for, [("worker", 0, "echo while-nobody-watched")])
    executor.api.wait(handles["worker-0"].executor_id, timeout=30)
    log_path = launch_for().log_path
    log_path.unlink()  # the scheduler died before the log was written
    restarted = DockerExecutor(namespace=namespace)
    assert restarted.poll(handles["worker-0"]).exit_code == 0
    assert log_path.read_text() == "while-nobody-watched\n"


def test_it_ends_the_task_with_249_when_the_ssh_runtime_says_the_barrier_timed_out(
    executor, launch_for, wait_exit, monkeypatch, tmp_path
):
    from clusters.executors import docker as docker_executor

    fake_runtime = tmp_path / "runtime"
    fake_runtime.mkdir()
    (fake_runtime / "entrypoint.sh").write_bytes((docker_executor.RUNTIME_DIR / "entrypoint.sh").read_bytes())
    (fake_runtime / "ssh.sh").write_text("exit 249\n")
    monkeypatch.setattr(docker_executor, "RUNTIME_DIR", fake_runtime)
    handles = start_job(executor, launch_for, [("worker", 0, "echo never")], ssh_authorized_keys="ssh-ed25519 AAAA x")
    assert wait_exit(handles["worker-0"]).exit_code == 249
    assert "never" not in log_of(launch_for, "worker-0")


def test_it_gives_a_terminated_container_sigterm_which_its_trap_sees(executor, launch_for, wait_exit):
    saves = "trap 'echo saved; exit 7' TERM; echo ready; sleep 60 & wait"
    handles = start_job(executor, launch_for, [("worker", 0, saves)])
    log = launch_for().log_path
    deadline = time.monotonic() + 20
    while "ready" not in (log.read_text() if log.exists() else "") and time.monotonic() < deadline:
        time.sleep(0.1)
    executor.terminate(handles["worker-0"], 30)
    executor.terminate(handles["worker-0"], 30)  # (once: a repeat sends nothing)
    status = wait_exit(handles["worker-0"], timeout=10)
    assert status.exit_code == 7
    assert "saved" in log.read_text()
    executor.stop(handles["worker-0"])
