"""The terminal websocket against a task's real sshd: bytes both ways, resize, several at once,
and a clean close with a message when the task ends."""

import asyncio
import json

import pytest
from django.utils import timezone

from tests.ssh.websocket import communicator, read_until, read_until_closed, session_cookie, socket_path

pytestmark = [pytest.mark.docker, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def running_job(make_job, ssh_containers, docker_node):
    job = make_job(roles={"worker": 2})
    for index in range(2):
        container = ssh_containers.start(job, "worker", index)
        ssh_containers.record_running(job, "worker", index, container, docker_node)
    return job


async def open_terminal(job, cookie, index=0, cols=80, rows=24):
    comm = communicator(socket_path(job, index=index, cols=cols, rows=rows), cookie=cookie)
    connected, code = await comm.connect(timeout=10)
    assert connected, code
    return comm


def test_it_pumps_keystrokes_and_output_through_a_pty(running_job, user):
    cookie = session_cookie(user)

    async def go():
        comm = await open_terminal(running_job, cookie, cols=101, rows=33)
        await comm.send_to(bytes_data=b"echo h''i; stty size; tty\n")
        output = await read_until(comm, b"/dev/pts/")
        await comm.disconnect()
        return output

    output = asyncio.run(go())
    assert b"\rhi\r\n" in output  # the output line, not the echoed h''i
    assert b"33 101" in output


def test_it_resizes_the_pty(running_job, user):
    cookie = session_cookie(user)

    async def go():
        comm = await open_terminal(running_job, cookie)
        await comm.send_to(text_data=json.dumps({"type": "resize", "cols": 132, "rows": 50}))
        await comm.send_to(bytes_data=b"stty size\n")
        output = await read_until(comm, b"50 132")
        await comm.disconnect()
        return output

    assert b"50 132" in asyncio.run(go())


def test_it_lets_an_admin_open_the_owners_task(running_job, admin_user):
    cookie = session_cookie(admin_user)

    async def go():
        comm = await open_terminal(running_job, cookie)
        await comm.send_to(bytes_data=b"hostname\n")
        output = await read_until(comm, b"worker-0\r\n")
        await comm.disconnect()
        return output

    assert b"worker-0" in asyncio.run(go())


def test_it_serves_several_terminals_at_once(running_job, user):
    cookie = session_cookie(user)

    async def go():
        terminals = [await open_terminal(running_job, cookie, index=i % 2) for i in range(4)]
        for number, comm in enumerate(terminals):
            await comm.send_to(bytes_data=f"echo term-$((40+{number}))-$(hostname)\n".encode())
        outputs = [
            await read_until(comm, f"term-{40 + number}-worker-{number % 2}".encode())
            for number, comm in enumerate(terminals)
        ]
        for comm in terminals:
            await comm.disconnect()
        return outputs

    assert len(asyncio.run(go())) == 4


def test_it_closes_with_a_message_when_the_task_ends(running_job, user, ssh_containers):
    cookie = session_cookie(user)
    container = ssh_containers.containers[0]

    async def go():
        comm = await open_terminal(running_job, cookie)
        await comm.send_to(bytes_data=b"echo ready\n")
        await read_until(comm, b"ready\r\n")
        await asyncio.to_thread(container.kill)
        return await read_until_closed(comm)

    output, code = asyncio.run(go())
    assert b"alice~ssh-demo/worker-0" in output
    assert code == 1000


def test_it_waits_for_a_task_sshd_that_is_still_starting(running_job, user):
    """A terminal opened the moment a task turns RUNNING finds nothing listening yet: it says it is
    waiting and connects once the sshd answers (here: a forwarder to the real sshd, opened late)."""
    import socket

    task = running_job.tasks.get(role="worker", index=0)
    sshd_port = task.ports["ssh"][0]
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        late_port = probe.getsockname()[1]
    task.ports, task.started_at = {"ssh": [late_port]}, timezone.now()  # it has just started
    task.save(update_fields=["ports", "started_at"])
    cookie = session_cookie(user)

    async def forward(reader, writer):
        sshd_reader, sshd_writer = await asyncio.open_connection("127.0.0.1", sshd_port)

        async def pipe(source, sink):
            while data := await source.read(65536):
                sink.write(data)
                await sink.drain()
            sink.close()

        await asyncio.gather(pipe(reader, sshd_writer), pipe(sshd_reader, writer), return_exceptions=True)

    async def go():
        comm = await open_terminal(running_job, cookie)
        waiting = await read_until(comm, b"waiting for the task's SSH server")
        server = await asyncio.start_server(forward, "127.0.0.1", late_port)
        await comm.send_to(bytes_data=b"echo late-$((6*7))\n")
        output = await read_until(comm, b"late-42", timeout=20)
        await comm.disconnect()
        server.close()
        return waiting, output

    waiting, output = asyncio.run(go())
    assert b"may have stopped" not in waiting
    assert b"late-42" in output


def test_it_tells_at_once_that_a_task_up_for_a_while_does_not_answer(running_job, user):
    import socket
    from datetime import timedelta

    task = running_job.tasks.get(role="worker", index=0)
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        task.ports = {"ssh": [probe.getsockname()[1]]}  # nothing listens there
    task.started_at = timezone.now() - timedelta(minutes=5)
    task.save(update_fields=["ports", "started_at"])

    cookie = session_cookie(user)

    async def go():
        comm = await open_terminal(running_job, cookie)
        return await read_until_closed(comm, timeout=5)

    output, _ = asyncio.run(go())
    assert b"The task may have stopped" in output
    assert b"waiting for" not in output


def test_it_closes_saying_so_when_the_task_ends_while_its_sshd_lingers(running_job, user, monkeypatch):
    """Issue 36: the task ended but its sshd (or a connection child of it) still answered, and the
    page said "Connected" on. The socket now follows the task's state."""
    from jobs.models import TaskState
    from web import consumers

    monkeypatch.setattr(consumers, "TASK_WATCH_S", 0.2)
    cookie = session_cookie(user)
    task = running_job.tasks.get(role="worker", index=0)

    async def go():
        comm = await open_terminal(running_job, cookie)
        await comm.send_to(bytes_data=b"echo ready\n")
        await read_until(comm, b"ready\r\n")
        task.state = TaskState.SUCCEEDED
        await asyncio.to_thread(task.save, update_fields=["state"])
        return await read_until_closed(comm, timeout=5)

    output, code = asyncio.run(go())
    assert b"alice~ssh-demo/worker-0: the task ended." in output
    assert code == consumers.CLOSE_TASK_GONE
