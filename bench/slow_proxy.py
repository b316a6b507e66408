"""A unix-socket proxy in front of a Docker engine that can be made slow: while `delay` is above
zero each piece of a request reaches the engine that many seconds after it came (in order, not
adding up), and the answers pass at once. bench/chaos.py's --slow fault: an engine that answers,
only too late for the scheduler's call deadline. Standard library only; its loop runs on a thread
of its own, so the bench's own (synchronous) code goes on beside it.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
import time
from pathlib import Path


class SlowProxy:
    def __init__(self, path: Path, upstream: str) -> None:
        self.path = path
        self.upstream = upstream.removeprefix("unix://")
        self.delay = 0.0  # seconds; read when each piece of a request comes in
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="slow-proxy", daemon=True)
        self._server: asyncio.AbstractServer | None = None

    @property
    def url(self) -> str:
        return f"unix://{self.path}"

    def start(self) -> None:
        self._thread.start()
        self._server = asyncio.run_coroutine_threadsafe(
            asyncio.start_unix_server(self._serve, path=str(self.path)), self._loop
        ).result(timeout=10)

    def stop(self) -> None:
        """Closes the listener and every open connection, ends the thread, removes the socket."""
        asyncio.run_coroutine_threadsafe(self._close(), self._loop).result(timeout=10)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(timeout=10)
        self._loop.close()
        self.path.unlink(missing_ok=True)

    async def _close(self) -> None:
        if self._server is not None:
            self._server.close()
        current = asyncio.current_task()
        tasks = [task for task in asyncio.all_tasks() if task is not current]
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)

    async def _serve(self, client_reader: asyncio.StreamReader, client_writer: asyncio.StreamWriter) -> None:
        try:
            engine_reader, engine_writer = await asyncio.open_unix_connection(self.upstream)
        except OSError:
            client_writer.close()
            return
        try:  # (stop() cancels it: it ends quietly)
            # A request's end closes the engine side: the engine then ends the answer side.
            await asyncio.gather(
                self._delayed(client_reader, engine_writer),
                self._pipe(engine_reader, client_writer),
                return_exceptions=True,
            )
        except asyncio.CancelledError:
            pass
        finally:
            for writer in (engine_writer, client_writer):
                writer.close()

    async def _delayed(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        """Each piece is sent `delay` seconds after it came: a queue, so delays do not add up."""
        pieces: asyncio.Queue[tuple[float, bytes]] = asyncio.Queue()

        async def read() -> None:
            try:
                while data := await reader.read(65536):
                    pieces.put_nowait((time.monotonic() + self.delay, data))
            finally:  # the end (or a reset) goes in line too
                pieces.put_nowait((time.monotonic() + self.delay, b""))

        reading = asyncio.create_task(read())
        try:
            while True:
                due, data = await pieces.get()
                await asyncio.sleep(max(0.0, due - time.monotonic()))
                if not data:
                    break
                writer.write(data)
                await writer.drain()
        finally:
            reading.cancel()
            with contextlib.suppress(asyncio.CancelledError, OSError):
                await reading
            writer.close()

    async def _pipe(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while data := await reader.read(65536):
                writer.write(data)
                await writer.drain()
        finally:
            writer.close()
