"""Which of an engine's containers ended, from its event stream, so a pass inspects only those.

Each engine's ExitWatch follows the engine's `events` (its containers of the portal's namespace
that die or are removed) and gathers their ids; `seen()` hands them over. Where it cannot vouch
for having seen every exit it says so (None): the caller then looks at the node in full, every
task inspected but, while the stream is open, those one listing of the running containers vouches
for (`listing_vouches`: a call a node, not one a task). That is
the case until the stream is open, once right after each (re)open (what ended while none was
open), while it is lost (an engine restarted: it is opened again, after a short wait that grows
while it fails), and every RECONCILE_S (a low-rate full look: what a stream could miss, a
connection that died without a word). An exit is recorded by the
inspection that follows, as before; an id seen twice finds its task recorded already. An exit
rings the process's bell (bells.py): a scheduler waiting between idle passes passes at once.

Every engine's stream is read on one thread of the process (engine_streams.py, an asyncio loop,
with the containers' logs): a stream costs a connection, not a thread. Only engines reached over a
unix socket or plain TCP are followed; any other (TLS, ssh) is always looked at in full.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import random
import threading
import time
from typing import Any
from urllib.parse import quote

from clusters.executors.bells import bell
from clusters.executors.engine_streams import Streams, endpoint, next_data, open_stream

log = logging.getLogger("pai.executors.docker")

ENDED = ("die", "destroy")  # a container's events that may end its task
RECONCILE_S = 60.0  # how often a node's tasks are looked at in full, streams or not
LISTING_LAG_S = 2.0  # the look after a stream opened comes again this much later (dockerd's listing lags)
REOPEN_WAIT_S = (0.5, 10.0)  # the wait before a lost stream is opened again: first, most
IDLE_S = 300.0  # a stream nobody asked about for this long is closed (opened again when asked)
READ_TIMEOUT_S = 30.0  # (how often a quiet stream checks whether it is still wanted)


class ExitWatch:
    """One engine's containers (of `namespace`) that ended since last asked."""

    def __init__(self, docker_url: str | None, namespace: str, marker_label: str) -> None:
        self.address = endpoint(docker_url)
        self.filters = {"label": [f"{marker_label}={namespace}"], "type": ["container"], "event": list(ENDED)}
        self._lock = threading.Lock()
        self._ended: set[str] = set()
        self._handed: set[str] = set()  # the ids seen() handed over last
        self._open = False
        self._fresh = False  # opened since the last full look
        self._following = False
        self._next_full = 0.0
        self._listable: set[str] | None = None  # the last full look's: ends its listing may not vouch for
        self._asked = time.monotonic()
        self.opened = 0  # how many times the stream was opened (a test's, a bench's look)

    def seen(self, may_look_in_full: bool = True) -> set[str] | None:
        """The containers that ended since the last call (their ids), or None: look at all of them.
        A full look that is due but not allowed now (`may_look_in_full` False: the pass has spent
        its budget of full looks) stays due; the ids gathered meanwhile are handed over as ever."""
        now = time.monotonic()
        with self._lock:
            self._asked = now
            if self.address is not None and not self._following:
                self._following = True
                Streams.shared().follow(self._follow)
            due = not self._open or self._fresh or now >= self._next_full
            if due and may_look_in_full:
                # With the stream open, a look may take a listing's word for the containers it
                # lists running, but for those whose end the stream gathered (listed "running" for
                # a moment after their `die` on dockerd 20.10: bench/docker_list_lag.py):
                # running_listed(). One that ended in that moment before the stream opened has no
                # event gathered: the look after an open comes again once the moment has passed.
                # While the stream is not open, every task is polled.
                self._listable = self._ended if self._open else None
                if self._open and self._fresh:
                    self._next_full = now + LISTING_LAG_S
                else:  # (staggered: the nodes' full looks spread over the period, not all in one pass)
                    self._next_full = now + RECONCILE_S * random.uniform(0.5, 1.0)
                self._fresh = False
                self._ended = set()
                self._handed = set()
                return None
            self._listable = None
            ended, self._ended, self._handed = self._ended, set(), self._ended
            return ended

    def listing_vouches(self, listed_running: set[str]) -> set[str] | None:
        """Of the containers a listing found running, those the full look just handed over (seen()
        said None) may take its word for: all but those whose end the stream gathered. None where
        that look must poll every task (the stream was not open)."""
        with self._lock:
            if self._listable is None:
                return None
            return listed_running - self._listable

    def still_running(self, container_id: str) -> None:
        """An inspection of a container handed over as ended found it running (its event came
        first): it is handed over again next time."""
        with self._lock:
            if container_id in self._handed:
                self._ended.add(container_id)

    async def _follow(self) -> None:
        wait = REOPEN_WAIT_S[0]
        try:
            while time.monotonic() - self._asked < IDLE_S:
                try:
                    await self._read()
                    wait = REOPEN_WAIT_S[0]
                except (OSError, ValueError, asyncio.IncompleteReadError) as exc:
                    log.info("event stream of %s lost: %r; opening it again in %.1f s", self.address, exc, wait)
                except Exception:  # (a reader's bug must not end the follow: the tasks are inspected meanwhile)
                    log.exception("event stream of %s failed; opening it again in %.1f s", self.address, wait)
                with self._lock:
                    self._open = False
                await asyncio.sleep(wait)
                wait = min(wait * 2, REOPEN_WAIT_S[1])
        finally:
            with self._lock:
                self._open = self._following = False

    async def _read(self) -> None:
        assert self.address is not None
        query = quote(json.dumps(self.filters))
        reader, writer, chunked = await open_stream(self.address, f"/events?filters={query}")
        try:
            with self._lock:
                self._open, self._fresh = True, True
                self.opened += 1
            buffer = b""
            while time.monotonic() - self._asked < IDLE_S:
                try:
                    data = await asyncio.wait_for(next_data(reader, chunked), READ_TIMEOUT_S)
                except TimeoutError:
                    continue
                if not data:
                    raise ConnectionResetError("the engine ended the stream")
                *lines, buffer = (buffer + data).split(b"\n")
                for line in lines:
                    self._note(line)
        finally:
            writer.close()
            with contextlib.suppress(OSError):
                await writer.wait_closed()

    def _note(self, line: bytes) -> None:
        if not line.strip():
            return
        event: dict[str, Any] = json.loads(line)
        container_id = (event.get("Actor") or {}).get("ID") or event.get("id")
        if container_id and (event.get("Action") or event.get("status")) in ENDED:
            with self._lock:
                self._ended.add(container_id)
            bell().ring()  # (a waiting scheduler passes now)
