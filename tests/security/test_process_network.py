"""A process task's own network namespace (issue 27, items 4 and 5), tried with real sandboxed
tasks: the host's loopback and Docker jobs' private addresses are out of its reach, what it
listens on is not on the host's loopback, and only its declared ports reach it, at the node's
address (where a job's tasks reach each other)."""

from __future__ import annotations

import contextlib
import os
import shlex
import shutil
import signal
import socket
import subprocess
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from catalogue import Message
from clusters.executors.app_ports import job_app_address
from clusters.executors.base import ExecutorError, Failure, TaskHandle, TaskLaunch
from clusters.executors.netns import TaskNetwork
from clusters.executors.process import ProcessExecutor
from clusters.executors.sandbox import Sandbox
from clusters.executors.supervise import PASTA_PID_NAME, recorded_process
from tests.conftest import processes_running, require
from tests.docker.conftest import docker_engine_ready
from tests.scheduler.test_process_executor import parent_of

NODE = "127.0.0.2"  # the default local node's address
SUBNET_POOL = "10.213.0.0/16"  # (the portal's default PAI_DOCKER_SUBNET_POOL)
PASTA = shutil.which("pasta") or "pasta"
SERVER = ("python3", "-m", "http.server", "8000")


@pytest.fixture
def executor(tmp_path, process_work_root) -> ProcessExecutor:
    executor = ProcessExecutor(
        process_work_root,
        address=NODE,
        sandbox=Sandbox(
            hidden=(str(tmp_path), str(process_work_root)), network=TaskNetwork(docker_subnet_pool=SUBNET_POOL)
        ),
    )
    require(not executor.sandbox_problem, f"a sandbox with a network of its own ({executor.sandbox_problem})")
    return executor


@pytest.fixture
def run_task(executor, make_launch):
    """Runs `command` as a sandboxed task to its end; its exit code and log."""

    def run(command: str, **overrides) -> tuple[int, str]:
        launch = make_launch(command, **overrides)
        handle = executor.start(launch)
        status = wait_until(lambda: None if (status := executor.poll(handle)).running else status, 30)
        return status.exit_code, launch.log_path.read_text()

    return run


@pytest.fixture
def host_listener() -> Iterator[int]:
    """A server on the host's 127.0.0.1 (the portal's place); its port."""
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(8)
        yield listener.getsockname()[1]


def wait_until(found, timeout: float):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if (value := found()) is not None:
            return value
        time.sleep(0.01)  # (servers inside tasks come up in 0.1-0.2 s: at 0.05 s each wait overshot ~25 ms)
    raise AssertionError("timed out")


def connects(port: int, address: str = "127.0.0.1") -> str:
    """Shell: prints REACHED or refused for a TCP connection from the task."""
    return f"if (exec 3<>/dev/tcp/{address}/{port}) 2>/dev/null; then echo REACHED; else echo refused; fi"


def serving(port: int, body: str = "from the task") -> str:
    """Shell: an HTTP server of the task's on 0.0.0.0:<port> (pasta forwards what it is given) that
    answers every request with `body`; it says `listening` in the task's log once it does."""
    return f"exec python3 -S -c {shlex.quote(TINY_SERVER)} {port} {shlex.quote(body)}"


TINY_SERVER = """
import socket, sys
server = socket.create_server(("0.0.0.0", int(sys.argv[1])))
answer = b"HTTP/1.0 200 OK\\r\\n\\r\\n" + sys.argv[2].encode() + b"\\n"
print("listening", flush=True)
while True:
    connection = server.accept()[0]
    connection.recv(65536)
    connection.sendall(answer)
    connection.close()
"""


def started_serving(executor: ProcessExecutor, launch: TaskLaunch) -> TaskHandle:
    """The task of `serving`, started, once its server listens. (Connections tried while it started,
    until one was answered, took ~1.03 s now and then, TCP's first retransmission: ~1 s in each of
    four tests when two workers ran them.)"""
    handle = executor.start(launch)
    wait_until(lambda: (launch.log_path.exists() and "listening" in launch.log_path.read_text()) or None, 20)
    return handle


def pastas() -> set[int]:
    """The pids of the box's running pastas (other test sessions' tasks' among them)."""
    result = subprocess.run(["pgrep", "-a", "passt"], capture_output=True, text=True, check=False)
    return {int(line.split()[0]) for line in result.stdout.splitlines() if not line.endswith("<defunct>")}


def pasta_of(executor: ProcessExecutor, handle) -> int | None:
    """The running task's pasta: the one its supervisor started (another session's tasks run theirs)."""
    supervisor = (executor.work_root / handle.executor_id / "pid").read_text().split()[0]
    for pid in pastas():
        with contextlib.suppress(OSError):
            if Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[1] == supervisor:
                return pid
    return None


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind((NODE, 0))
        return probe.getsockname()[1]


def test_it_keeps_the_hosts_loopback_out_of_a_tasks_reach(run_task, host_listener):
    code, log = run_task(connects(host_listener))
    assert (code, log.strip()) == (0, "refused")


def test_it_keeps_a_tasks_loopback_server_off_the_hosts_loopback(executor, make_launch):
    port = free_port()
    launch = make_launch(f"python3 -u -m http.server --bind 127.0.0.1 {port}")
    handle = executor.start(launch)
    try:
        log = launch.log_path
        wait_until(lambda: (log.exists() and "Serving HTTP" in log.read_text()) or None, 20)  # listening inside
        with pytest.raises(OSError), socket.create_connection(("127.0.0.1", port), timeout=2):
            pass
    finally:
        executor.stop(handle)


def test_it_forwards_a_declared_port_at_the_node_address(executor, make_launch):
    port = free_port()
    handle = started_serving(executor, make_launch(serving(port), ports={"http": [port]}))
    try:
        assert "from the task" in (http_get(NODE, port) or "")
        assert http_get("127.0.0.1", port) is None  # (only at the node's address)
    finally:
        executor.stop(handle)


def http_get(address: str, port: int) -> str | None:
    """The answer, or None (pasta accepts at once on a forwarded port, and closes the connection
    when nothing listens inside yet: an empty answer is no answer)."""
    try:
        with socket.create_connection((address, port), timeout=2) as connection:
            connection.sendall(b"GET / HTTP/1.0\r\n\r\n")
            return connection.makefile("rb").read().decode(errors="replace") or None
    except OSError:
        return None


def test_it_lets_a_jobs_tasks_reach_each_other_at_the_node_address(executor, make_launch, run_task, tmp_path):
    port = free_port()
    server = started_serving(
        executor,
        make_launch(
            serving(port), ports={"http": [port]}, role="ps", work_dir=tmp_path / "ps", log_path=tmp_path / "ps.log"
        ),
    )
    try:
        code, log = run_task(connects(port, NODE))
        assert (code, log.strip()) == (0, "REACHED")
    finally:
        executor.stop(server)


def test_it_lets_a_task_not_change_its_routes(run_task):
    _, log = run_task("ip route del unreachable 127.0.0.0/8 2>&1; ip route")
    assert "Operation not permitted" in log
    assert "unreachable 127.0.0.0/8" in log


@pytest.fixture
def docker_job_server() -> Iterator[str]:
    """A real container on a network of the portal's subnet pool, serving on port 8000: its address."""
    require(docker_engine_ready(), "a Docker engine with pai-portal/base:latest")
    name = f"pait-net-{uuid.uuid4().hex[:8]}"
    subnet = f"10.213.{uuid.uuid4().int % 200 + 50}.0/24"
    subprocess.run(["docker", "network", "create", "--subnet", subnet, name], check=True, capture_output=True)
    try:
        subprocess.run(
            ["docker", "run", "-d", "--name", name, "--network", name, "pai-portal/base:latest", *SERVER],
            check=True,
            capture_output=True,
        )
        address = subprocess.run(
            ["docker", "inspect", "-f", "{{range .NetworkSettings.Networks}}{{.IPAddress}}{{end}}", name],
            check=True,
            capture_output=True,
            text=True,
        ).stdout.strip()
        wait_until(lambda: http_get(address, 8000), 30)  # (the host reaches it: the server is up)
        yield address
    finally:
        subprocess.run(["docker", "rm", "-f", name], capture_output=True, check=False)
        subprocess.run(["docker", "network", "rm", name], capture_output=True, check=False)


@pytest.mark.docker  # (a real container, ~1.5 s: the Docker tier's, as every test that needs an engine)
def test_it_keeps_a_docker_jobs_private_address_out_of_reach(run_task, docker_job_server):
    code, log = run_task(connects(8000, docker_job_server))
    assert (code, log.strip()) == (0, "refused")


def test_it_leaves_no_pasta_after_a_task_ends(executor, make_launch):
    # The task ends once its pasta has been seen (a fixed `sleep 0.5` waited longer than needed).
    launch = make_launch("until [ -e pasta-seen ]; do sleep 0.01; done")
    handle = executor.start(launch)
    pasta = wait_until(lambda: pasta_of(executor, handle), 10)
    (launch.work_dir / "pasta-seen").touch()
    wait_until(lambda: None if executor.poll(handle).running else True, 30)
    assert wait_until(lambda: None if pasta in pastas() else True, 5)  # (told to end before the exit was recorded)


@pytest.fixture
def slow_to_end_pasta(tmp_path, process_work_root, monkeypatch) -> ProcessExecutor:
    """An executor whose tasks' pasta takes 1 s to end once told (the real pasta, held by a wrapper
    that kills it only then): the moment after a task's exit, stretched."""
    pasta = tmp_path / "slow-pasta"
    pasta.write_text(
        "#!/bin/bash\n"
        f"trap 'sleep 1; kill $real; wait $real; exit 0' TERM\n{shlex.quote(PASTA)} \"$@\" &\nreal=$!\nwait $real\n"
    )
    pasta.chmod(0o755)
    monkeypatch.setattr(Sandbox, "probe", lambda self: None)  # (each probe would wait for its end)
    network = TaskNetwork(docker_subnet_pool=SUBNET_POOL, pasta=str(pasta))
    sandbox = Sandbox(hidden=(str(tmp_path), str(process_work_root)), network=network)
    return ProcessExecutor(process_work_root, address=NODE, sandbox=sandbox)


def test_it_records_a_tasks_exit_before_its_pasta_has_gone(slow_to_end_pasta, make_launch):
    """pasta takes ~20 ms to go once told (the kernel releasing what it held); every task's exit
    waited for it before it was recorded (issue 49: a slot's round trip)."""
    executor = slow_to_end_pasta
    handle = executor.start(make_launch("true", ports={"ssh": [free_port()]}))
    wait_until(lambda: None if executor.poll(handle).running else True, 10)
    assert recorded_process(executor.work_root / handle.executor_id / PASTA_PID_NAME) is not None  # (still going)


def test_a_task_given_the_ports_of_one_that_just_ended_starts_once_they_are_freed(slow_to_end_pasta, make_launch):
    """The ended task's pasta holds them until it has gone: the next task's start waits for that
    (up to netns.PORTS_FREED_S) instead of calling them taken by another program."""
    executor, port = slow_to_end_pasta, free_port()
    launch = make_launch("true", ports={"ssh": [port]})
    first = executor.start(launch)
    wait_until(lambda: None if executor.poll(first).running else True, 10)
    second = make_launch("echo ran", index=1, ports={"ssh": [port]}, log_path=launch.log_path.with_name("worker-1.log"))
    handle = executor.start(second)
    status = wait_until(lambda: None if (status := executor.poll(handle)).running else status, 30)
    assert status.exit_code == 0 and "ran" in second.log_path.read_text()


def test_it_leaves_no_pasta_after_a_task_is_stopped(executor, make_launch):
    handle = executor.start(make_launch("sleep 300", ports={"http": [free_port()]}))
    pasta = wait_until(lambda: pasta_of(executor, handle), 10)
    executor.stop(handle)
    assert pasta not in pastas()


def test_it_ends_the_pasta_of_a_task_whose_supervisor_was_killed_as_it_cleans_up(executor, make_launch):
    """A supervisor ends its task's pasta; one killed -9 cannot, and nothing else would: its pasta
    held the task's ports for good (a later task given them failed as a port conflict)."""
    handle = executor.start(make_launch("sleep 1", ports={"http": [free_port()]}))
    pasta = wait_until(lambda: pasta_of(executor, handle), 10)
    supervisor = int((executor.work_root / handle.executor_id / "pid").read_text().split()[0])
    os.kill(supervisor, signal.SIGKILL)
    assert wait_until(lambda: None if executor.poll(handle).running else True, 10)
    executor.stop(handle)  # (what the scheduler does with a task found gone)
    assert wait_until(lambda: None if pasta in pastas() else True, 5)  # (SIGKILLed: gone in a moment)


FAKE = ("sleep", "307.7")  # what the "pasta" below runs (no other test runs it)


def test_it_ends_the_pasta_of_a_task_whose_supervisor_was_killed_while_pasta_set_up(
    tmp_path, process_work_root, make_launch, monkeypatch
):
    """Killed -9 while its pasta was still setting the namespace up (~20 ms, longer on a busy box),
    the supervisor had not yet written pasta's pid, and that pasta held the task's ports for good
    (two were found on the box after a busy run). A "pasta" that never says it is ready keeps the
    supervisor in that moment."""
    never_ready = tmp_path / "pasta"
    never_ready.write_text(f"#!/bin/sh\nexec {' '.join(FAKE)}\n")
    never_ready.chmod(0o755)
    monkeypatch.setattr(Sandbox, "probe", lambda self: None)  # (its probe would wait for it 10 s)
    network = TaskNetwork(docker_subnet_pool=SUBNET_POOL, pasta=str(never_ready))
    sandbox = Sandbox(hidden=(str(tmp_path), str(process_work_root)), network=network)
    executor = ProcessExecutor(process_work_root, address=NODE, sandbox=sandbox)
    handle = executor.start(make_launch("sleep 1", ports={"http": [free_port()]}))
    supervisor = int((executor.work_root / handle.executor_id / "pid").read_text().split()[0])
    pasta = wait_until(
        lambda: next((pid for pid in processes_running(*FAKE) if parent_of(pid) == supervisor), None), 10
    )
    os.kill(supervisor, signal.SIGKILL)
    assert wait_until(lambda: None if executor.poll(handle).running else True, 10)
    executor.stop(handle)
    assert wait_until(lambda: None if pasta in processes_running(*FAKE) else True, 5)


def test_it_tells_pasta_to_leave_its_ending_to_the_supervisor():
    """The supervisor ends each task's pasta itself (netns.Attached.close). pasta's own watch for
    its namespace's removal (an inotify group) made each end wait about 20 ms more for the kernel to
    drop it, before the task's exit was recorded (issue 49); nor does it serve DHCP to a task that
    may not change its address."""
    pasta = TaskNetwork().plan(NODE, {}, (2_000_001, 2_000_001))["pasta"]
    assert isinstance(pasta, list)
    assert {"--no-netns-quit", "--no-dhcp"} <= set(pasta)


def test_it_sets_every_route_the_plan_has_itself_and_leaves_others_to_ip():
    """As root the supervisor sets the routes over netlink (routing.py) instead of starting
    nsenter, sh and ip for each task; a line it does not know goes to `ip` as before."""
    from clusters.executors import routing

    for node in (NODE, "10.0.0.5"):
        assert routing.changes(TaskNetwork(docker_subnet_pool=SUBNET_POOL).routes(node)) is not None
    assert routing.changes(["route add blackhole 10.0.0.0/8"]) is None


@pytest.fixture
def taken_port() -> Iterator[int]:
    """A port another program holds on the node's address."""
    with socket.socket() as taken:
        taken.bind((NODE, 0))
        taken.listen(1)
        yield taken.getsockname()[1]


def test_it_refuses_to_start_a_task_whose_declared_port_is_taken(executor, make_launch, taken_port):
    """As the Docker engine refuses it: the scheduler places the job again, that port avoided."""
    with pytest.raises(ExecutorError, match=f"port {taken_port} on {NODE} is held by another program") as refused:
        executor.start(make_launch("echo ran", ports={"http": [taken_port]}))
    assert refused.value.failure is Failure.PORT_CONFLICT
    assert refused.value.messages[0].code == "exit.start.port_held"  # (the pages say it by its code)


def test_it_records_a_port_taken_meanwhile_as_a_port_conflict(run_task, executor, taken_port, monkeypatch):
    """Taken between the start's check and pasta's bind: the task's command never ran, and its
    exit is the exit spec's ContainerPortConflict, not the SIGKILL that stopped its sandbox."""
    monkeypatch.setattr(executor, "_check_ports_free", lambda launch: None)
    code, log = run_task("echo ran", ports={"http": [taken_port]})
    assert code == 253
    assert "cannot give the task its network" in log and "ran" not in log.splitlines()


def test_it_reports_a_port_taken_meanwhile_as_the_platforms_port_conflict(
    executor, make_launch, taken_port, monkeypatch
):
    """Not as the user's own exit 253 (which the exit spec reads as an unknown user failure,
    charged to the user's retries): a platform failure, retried free on a port not taken."""
    from clusters.executors.base import Failure

    monkeypatch.setattr(executor, "_check_ports_free", lambda launch: None)
    handle = executor.start(make_launch("echo ran", ports={"http": [taken_port]}))
    status = wait_until(lambda: None if (status := executor.poll(handle)).running else status, 30)
    assert status.failure is Failure.PORT_CONFLICT


def test_a_tasks_own_exit_253_stays_its_own(executor, make_launch):
    handle = executor.start(make_launch("exit 253"))
    status = wait_until(lambda: None if (status := executor.poll(handle)).running else status, 30)
    assert (status.exit_code, status.failure) == (253, None)


def test_it_says_to_open_dev_net_tun_when_pasta_cannot(monkeypatch, tmp_path):
    """Seen on a GPU machine's image: /dev/net/tun 0600, so pasta (as the task's uid) could not
    open it; the node's reason must say what to change."""
    from clusters.executors import netns

    private = tmp_path / "tun"
    private.touch(mode=0o600)
    monkeypatch.setattr(netns, "TUN_DEVICE", str(private))
    assert "chmod 666" in netns._no_network("pasta: Failed to open tun socket in namespace").text
    assert netns._no_network("pasta: something else") == Message.of(
        "exit.sandbox.no_own_network", said="pasta: something else"
    )


def test_it_opens_a_private_tun_device_to_users_as_root_and_says_so(monkeypatch, tmp_path):
    """`make run`, `addnode` and the tests start from a machine whose /dev/net/tun is 0600: as root
    they give it the distributions' usual 0666, saying what they changed."""
    from clusters.executors import netns

    private = tmp_path / "tun"
    private.touch(mode=0o600)
    monkeypatch.setattr(netns, "TUN_DEVICE", str(private))
    monkeypatch.setattr(netns.os, "geteuid", lambda: 0)
    assert "was 600: set to 0666" in netns.open_tun_to_users()
    assert private.stat().st_mode & 0o777 == 0o666
    assert netns.open_tun_to_users() == ""  # (nothing left to change)


def test_it_leaves_the_tun_device_alone_when_not_root(monkeypatch, tmp_path):
    from clusters.executors import netns

    private = tmp_path / "tun"
    private.touch(mode=0o600)
    monkeypatch.setattr(netns, "TUN_DEVICE", str(private))
    monkeypatch.setattr(netns.os, "geteuid", lambda: 1000)
    assert netns.open_tun_to_users() == ""
    assert private.stat().st_mode & 0o777 == 0o600


# -- an interactive app's port: open to its job's tasks and the portal alone (issue 44, item 6) ---


@pytest.fixture
def app_task(executor, make_launch, tmp_path):
    """Job 7's task serving an app (an `http` port) at its allocated port; that port."""
    port = free_port()
    launch = make_launch(
        serving(port, "the app of job 7"),
        ports={"web": [port]},
        app_ports=[port],
        job_app_endpoints=[(NODE, port)],
        role="main",
        work_dir=tmp_path / "main",
        log_path=tmp_path / "main.log",
    )
    handle = started_serving(executor, launch)
    yield port
    executor.stop(handle)


def test_it_opens_an_apps_port_at_the_jobs_own_address_and_not_the_nodes(app_task):
    assert "the app of job 7" in (http_get(job_app_address(7), app_task) or "")  # (where the proxy connects)
    assert http_get(NODE, app_task) is None


def test_it_lets_the_jobs_tasks_reach_its_app_at_the_node_address(app_task, run_task):
    code, log = run_task(connects(app_task, NODE), job_app_endpoints=[(NODE, app_task)])
    assert (code, log.strip()) == (0, "REACHED")


def reaches(port: int, address: str, within_s: int = 2) -> str:
    """Shell: REACHED, or `no` (pasta leaves a connection to a port nobody forwards unanswered)."""
    attempt = f"timeout {within_s} bash -c 'exec 3<>/dev/tcp/{address}/{port}' 2>/dev/null"
    return f"if {attempt}; then echo REACHED; else echo no; fi"


@pytest.mark.slow  # (the connection to the node's address waits out its time)
def test_it_keeps_another_jobs_task_from_an_app_at_either_address(app_task, run_task):
    check = f"{reaches(app_task, NODE)}; {reaches(app_task, job_app_address(7))}"
    code, log = run_task(check, job_id=8, owner_id=2)
    assert (code, log.split()) == (0, ["no", "no"])
