"""The web SSH terminal: a websocket per terminal, bridged to an asyncssh PTY in the task.

Frames from the browser: binary = keystrokes (bytes for the PTY); text = JSON control messages,
`{"type": "resize", "cols": 120, "rows": 40}`. Frames to the browser: binary = PTY output.
Refusals happen at the handshake: no session user -> 4403; not the owner or an admin, or no such
job/task -> 4404 (others' jobs do not exist for them). The Origin is checked in front of this
consumer (AllowedHostsOriginValidator in pai_portal/asgi.py).
"""

from __future__ import annotations

import asyncio
import json
import logging
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qs

import asyncssh
from channels.db import database_sync_to_async
from channels.generic.websocket import AsyncWebsocketConsumer
from django.utils import timezone

from jobs.actions import get_job_for
from jobs.models import Job, Task, TaskState
from jobs.ssh import job_private_key, ssh_endpoint

log = logging.getLogger(__name__)

CLOSE_FORBIDDEN = 4403
CLOSE_NOT_FOUND = 4404
CLOSE_TASK_GONE = 4410
CONNECT_TIMEOUT_S = 10
KEEPALIVE_INTERVAL_S = 15
# A task turns RUNNING a moment before its sshd listens: a terminal opened within this long of its
# start waits for it (saying so) instead of telling the user the task may have stopped.
SSHD_START_WAIT_S = 15
SSHD_RETRY_S = 0.25
# How often an open terminal checks that its task still runs: a task that ended while its sshd (or a
# connection child of it) lingers, or whose node vanished without a FIN, would otherwise leave the
# page saying "Connected" for minutes (issue 36).
TASK_WATCH_S = 2.0
DEFAULT_SIZE = (80, 24)
MAX_SIZE = 1000


@dataclass(frozen=True)
class TerminalTarget:
    host: str
    port: int
    private_key: str
    label: str  # `<user>~<job>/<role>-<index>`, for messages
    starting_for_s: float = 0.0  # how much longer its sshd may still be starting (0: not at all)
    task_id: int = 0


def _lookup_target(user: Any, full_name: str, role: str, index: int) -> TerminalTarget | str | None:
    """The task's sshd if the user may open it; None when not visible; a message when not running."""
    try:
        job = get_job_for(user, full_name)
    except Job.DoesNotExist:
        return None
    task = Task.objects.select_related("node").filter(job=job, role=role, index=index).first()
    if task is None:
        return None
    label = f"{job.full_name}/{role}-{index}"
    endpoint = ssh_endpoint(task)
    if task.state != TaskState.RUNNING or endpoint is None:
        return f"{label} is not running ({task.state.lower()}): nothing to connect to."
    now = timezone.now()
    starting_for_s = max(0.0, SSHD_START_WAIT_S - (now - (task.started_at or now)).total_seconds())
    return TerminalTarget(endpoint[0], endpoint[1], job_private_key(job), label, starting_for_s, task.pk)


def _task_is_running(task_id: int) -> bool:
    return Task.objects.filter(pk=task_id, state=TaskState.RUNNING).exists()


def _clamp_size(cols: Any, rows: Any) -> tuple[int, int]:
    try:
        return max(1, min(int(cols), MAX_SIZE)), max(1, min(int(rows), MAX_SIZE))
    except (TypeError, ValueError):
        return DEFAULT_SIZE


class TerminalConsumer(AsyncWebsocketConsumer):
    conn: asyncssh.SSHClientConnection | None = None
    process: asyncssh.SSHClientProcess | None = None
    pump: asyncio.Task | None = None
    watch: asyncio.Task | None = None

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        # What the user typed (and the last size) before the SSH session was open.
        self.early_input = bytearray()
        self.size = DEFAULT_SIZE

    async def connect(self) -> None:
        user = self.scope.get("user")
        if user is None or not user.is_authenticated:
            await self.close(code=CLOSE_FORBIDDEN)
            return
        kwargs = self.scope["url_route"]["kwargs"]
        target = await database_sync_to_async(_lookup_target)(
            user, kwargs["full_name"], kwargs["role"], int(kwargs["index"])
        )
        if target is None:
            await self.close(code=CLOSE_NOT_FOUND)
            return
        await self.accept()
        if isinstance(target, str):
            await self._say_and_close(target, CLOSE_TASK_GONE)
            return
        query = parse_qs(self.scope.get("query_string", b"").decode())
        self.size = _clamp_size(query.get("cols", [None])[0], query.get("rows", [None])[0])
        self.pump = asyncio.create_task(self._run(target))
        self.watch = asyncio.create_task(self._watch(target))

    async def _watch(self, target: TerminalTarget) -> None:
        """Ends the session, saying why, once the task is no longer RUNNING."""
        while await database_sync_to_async(_task_is_running)(target.task_id):
            await asyncio.sleep(TASK_WATCH_S)
        if self.pump is not None and not self.pump.done():
            self.pump.cancel()
        await self._say_and_close(f"{target.label}: the task ended.", CLOSE_TASK_GONE)

    async def _connect(self, target: TerminalTarget) -> asyncssh.SSHClientConnection:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + target.starting_for_s  # a task up for a while answers at once, or not
        said = False
        while True:
            try:
                return await asyncio.wait_for(
                    asyncssh.connect(
                        target.host,
                        target.port,
                        username="root",
                        client_keys=[asyncssh.import_private_key(target.private_key)],
                        known_hosts=None,  # the task's host key is made at its start: nothing to pin
                        agent_path=None,
                        config=None,  # never the portal user's ~/.ssh/config
                        # A task whose node vanished sends no FIN: keepalives notice it.
                        keepalive_interval=KEEPALIVE_INTERVAL_S,
                        keepalive_count_max=3,
                    ),
                    CONNECT_TIMEOUT_S,
                )
            except ConnectionRefusedError:
                if loop.time() >= deadline:
                    raise
                if not said:
                    await self._say(f"{target.label}: waiting for the task's SSH server to start...")
                    said = True
                await asyncio.sleep(SSHD_RETRY_S)

    async def _run(self, target: TerminalTarget) -> None:
        try:
            self.conn = await self._connect(target)
            self.process = await self.conn.create_process(
                term_type="xterm-256color", term_size=self.size, encoding=None
            )
            if self.early_input:
                self.process.stdin.write(bytes(self.early_input))
                self.early_input.clear()
            while True:
                data = await self.process.stdout.read(65536)
                if not data:
                    break
                await self.send(bytes_data=data)
            message = f"{target.label}: session ended."
        except asyncio.CancelledError:
            raise
        except (TimeoutError, OSError, asyncssh.Error) as exc:
            log.info("terminal %s: %s", target.label, exc)
            message = f"{target.label}: the connection ended ({exc or type(exc).__name__}). The task may have stopped."
        if self.watch is not None:
            self.watch.cancel()
        ended = not await database_sync_to_async(_task_is_running)(target.task_id)
        await self._say_and_close(
            f"{target.label}: the task ended." if ended else message, CLOSE_TASK_GONE if ended else 1000
        )

    async def _say(self, message: str) -> None:
        await self.send(bytes_data=f"\r\n\x1b[33m[{message}]\x1b[0m\r\n".encode())

    async def _say_and_close(self, message: str, code: int) -> None:
        await self._say(message)
        await self.close(code=code)

    async def receive(self, text_data: str | None = None, bytes_data: bytes | None = None) -> None:
        if bytes_data is not None:
            self._type(bytes_data)
            return
        try:
            message = json.loads(text_data or "")
        except ValueError:
            return
        if not isinstance(message, dict):
            return
        if message.get("type") == "resize":
            self.size = _clamp_size(message.get("cols"), message.get("rows"))
            if self.process is not None:
                self.process.change_terminal_size(*self.size)
        elif message.get("type") == "input":
            self._type(str(message.get("data", "")).encode())

    def _type(self, data: bytes) -> None:
        if self.process is not None:
            self.process.stdin.write(data)
        elif self.pump is not None:
            self.early_input += data

    async def disconnect(self, code: int) -> None:
        for job in (self.pump, self.watch):
            if job is not None and not job.done():
                job.cancel()
        if self.process is not None:
            self.process.close()
        if self.conn is not None:
            self.conn.close()
