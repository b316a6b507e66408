"""The scheduler woken the moment there is work, not at the end of its idle wait.

Between idle passes the scheduler's loop waits (PAI_SCHEDULER_INTERVAL, half a second by default);
a task's exit or a user's submit found only by the next pass waited up to that long, and on an
idle cluster most of a short job's time from submit to done was those waits. Whatever learns of
such a change rings this process's bell (`bell()`), and the wait ends:
- a Docker engine's event stream (docker_events.ExitWatch, on the streams thread) rings it itself;
- a process node's supervisors are other processes: a process that starts or polls its tasks
  listens in the node's work root (`Bell.listen`: a datagram socket of its own in BELLS_DIR), and
  each supervisor, once it has recorded its task's exit, sends a byte to every socket there
  (`rings.ring_listeners`);
- the portal's own changes (a submit, a stop: jobs.wake) ring the sockets in PAI_WORK_ROOT's
  BELLS_DIR, where the scheduler listens; on PostgreSQL they are also NOTIFYed, which a scheduler
  on another machine hears through a connection of its own that this bell watches
  (scheduling.notices: `Bell.watch`).

A ring only ends the wait: the pass that follows finds what changed as ever (poll, inspect, read
the queue), so a ring lost costs the wait it always cost, and one for nothing costs a pass. The
ringing side (`ring_listeners`) is rings.py: the supervisors and Slurm's task wrapper import that
alone, none of this module's selectors, threading and logging (~12 ms of imports per Slurm step).
"""

from __future__ import annotations

import contextlib
import logging
import os
import selectors
import socket
import threading
from collections.abc import Callable
from typing import Any, Literal

from clusters.executors.rings import BELLS_DIR, CHANGES, EXITS, own_prefix, socket_in

__all__ = ["BELLS_DIR", "CHANGES", "EXITS", "Bell", "bell"]

log = logging.getLogger("pai.executors.bells")

Drained = Literal["rang", "quiet", "lost"]  # what a watched source's drain found
RANG: Drained = "rang"
QUIET: Drained = "quiet"
LOST: Drained = "lost"


class Bell:
    """This process's wake-up: rung from any thread, or by a supervisor through a socket it listens on."""

    def __init__(self) -> None:
        self._selector = selectors.DefaultSelector()
        self._lock = threading.Lock()
        self._rung, self._ringer = socket.socketpair()
        self._rung.setblocking(False)
        self._ringer.setblocking(False)
        self._selector.register(self._rung, selectors.EVENT_READ, (EXITS, _drained(self._rung)))
        self._listening: dict[str, socket.socket] = {}  # by work root
        self._deaf: set[str] = set()  # work roots it could not listen in

    def ring(self) -> None:
        """A task ended (rung from another thread of this process)."""
        with contextlib.suppress(OSError):  # (full: it is rung already)
            self._ringer.send(b"!")

    def wait(self, seconds: float) -> set[str]:
        """Until rung or `seconds` have passed: what rang (EXITS, CHANGES; empty: nothing). Every
        ring until now is taken."""
        rung = set()
        for key, _ in self._selector.select(seconds):
            kind, drain = key.data
            drained = drain()
            if drained == RANG:
                rung.add(kind)
            elif drained == LOST:  # (readable for ever: its owner opens another)
                self.unwatch(key.fileobj)
        return rung

    def watch(self, source: Any, kind: str, drain: Callable[[], Drained]) -> None:
        """Rung for `kind` when `source` (anything with a fileno()) has something to read and
        `drain`, which takes it without blocking, says RANG (QUIET: what came was no ring; LOST:
        `source` is no longer watched)."""
        with self._lock:
            self._selector.register(source, selectors.EVENT_READ, (kind, drain))

    def unwatch(self, source: Any) -> None:
        with self._lock, contextlib.suppress(KeyError, ValueError):
            self._selector.unregister(source)

    def listen(self, work_root: str | os.PathLike[str], rings_for: str = EXITS) -> None:
        """Rung by whoever rings `work_root`'s bells, for `rings_for`: a process node's
        supervisors in its own (EXITS), the portal's changes in PAI_WORK_ROOT (CHANGES). Once
        per work root; one it cannot listen in is said once and not tried again (what would
        have rung there is found by the passes all the same)."""
        root = os.fspath(work_root)
        if root in self._listening or root in self._deaf:
            return
        with self._lock:
            if root in self._listening or root in self._deaf:
                return
            self._forget_gone()
            try:
                listener = self._bind(os.path.join(root, BELLS_DIR))
            except OSError as exc:
                log.warning("cannot listen in %s (what rings there is found by the passes alone): %s", root, exc)
                self._deaf.add(root)
                return
            self._selector.register(listener, selectors.EVENT_READ, (rings_for, _drained(listener)))
            self._listening[root] = listener

    @staticmethod
    def _bind(directory: str) -> socket.socket:
        """This process's socket in `directory` (made if need be)."""
        os.makedirs(directory, mode=0o700, exist_ok=True)
        directory_fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY)
        listener = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        try:
            # (one left by an earlier process of this pid is stale)
            name = f"{own_prefix()}{os.getpid()}.sock"
            with contextlib.suppress(FileNotFoundError):
                os.unlink(name, dir_fd=directory_fd)
            listener.bind(socket_in(directory_fd, name))
        except OSError:
            listener.close()
            raise
        finally:
            os.close(directory_fd)
        listener.setblocking(False)
        return listener

    def close(self) -> None:
        """Its sockets' files stay: the next supervisor that rings finds them refused and removes them."""
        for listener in self._listening.values():
            listener.close()
        self._listening.clear()
        self._selector.close()
        self._rung.close()
        self._ringer.close()

    def _forget_gone(self) -> None:
        """Stops listening in work roots that were removed (a test's, a bench's)."""
        for root, listener in list(self._listening.items()):
            if not os.path.isdir(os.path.join(root, BELLS_DIR)):
                self._selector.unregister(listener)
                listener.close()
                del self._listening[root]


def _drained(rung: socket.socket) -> Callable[[], Drained]:
    """What takes a socket's rings: through the socket object, so that one _forget_gone closed
    meanwhile reads nothing, never another file that took its descriptor's number."""

    def drain() -> Drained:
        with contextlib.suppress(OSError):
            while rung.recv(4096):
                pass
        return RANG

    return drain


_bell: Bell | None = None
_made = threading.Lock()


def bell() -> Bell:
    """This process's bell (made when first asked for: a process that never waits holds none)."""
    global _bell
    if _bell is not None:  # (asked on every poll of a process task: no lock once made)
        return _bell
    with _made:
        if _bell is None:
            _bell = Bell()
        return _bell
