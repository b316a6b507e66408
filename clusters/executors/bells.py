"""The scheduler woken the moment there is work, not at the end of its idle wait.

Between idle passes the scheduler's loop waits (PAI_SCHEDULER_INTERVAL, half a second by default);
a task's exit or a user's submit found only by the next pass waited up to that long, and on an
idle cluster most of a short job's time from submit to done was those waits. Whatever learns of
such a change rings this process's bell (`bell()`), and the wait ends:
- a Docker engine's event stream (docker_events.ExitWatch, on the streams thread) rings it itself;
- a process node's supervisors are other processes: a process that starts or polls its tasks
  listens in the node's work root (`Bell.listen`: a datagram socket of its own in BELLS_DIR), and
  each supervisor, once it has recorded its task's exit, sends a byte to every socket there
  (`ring_listeners`);
- the portal's own changes (a submit, a stop: jobs.wake) ring the sockets in PAI_WORK_ROOT's
  BELLS_DIR, where the scheduler listens (a scheduler on another machine than the web is not
  rung: it finds them by its passes, as before).

A ring only ends the wait: the pass that follows finds what changed as ever (poll, inspect, read
the queue), so a ring lost costs the wait it always cost, and one for nothing costs a pass.
Standard library only: the supervisors import it.
"""

from __future__ import annotations

import contextlib
import os
import selectors
import socket
import threading

BELLS_DIR = "bells"  # in a work root (the portal's own: tasks never see it)
# What rang: a task's end (a supervisor, an engine's event), or a user's change (jobs.wake).
EXITS, CHANGES = "exits", "changes"


def _address(directory_fd: int, name: str) -> str:
    """Through /proc, so that no path length limit applies (a Unix socket's path holds 107 bytes)."""
    return f"/proc/self/fd/{directory_fd}/{name}"


class Bell:
    """This process's wake-up: rung from any thread, or by a supervisor through a socket it listens on."""

    def __init__(self) -> None:
        self._selector = selectors.DefaultSelector()
        self._lock = threading.Lock()
        self._rung, self._ringer = socket.socketpair()
        self._rung.setblocking(False)
        self._ringer.setblocking(False)
        self._selector.register(self._rung, selectors.EVENT_READ, EXITS)
        self._listening: dict[str, socket.socket] = {}  # by work root

    def ring(self) -> None:
        """A task ended (rung from another thread of this process)."""
        with contextlib.suppress(OSError):  # (full: it is rung already)
            self._ringer.send(b"!")

    def wait(self, seconds: float) -> set[str]:
        """Until rung or `seconds` have passed: what rang (EXITS, CHANGES; empty: nothing). Every
        ring until now is taken."""
        ready = self._selector.select(seconds)
        for key, _ in ready:
            # (through the socket object: one _forget_gone closed meanwhile reads nothing, never
            # another file that took its descriptor's number)
            with contextlib.suppress(OSError):
                while key.fileobj.recv(4096):  # type: ignore[union-attr]
                    pass
        return {key.data for key, _ in ready}

    def listen(self, work_root: str | os.PathLike[str], rings_for: str = EXITS) -> None:
        """Rung by whoever rings `work_root`'s bells, for `rings_for`: a process node's
        supervisors in its own (EXITS), the portal's changes in PAI_WORK_ROOT (CHANGES). Once
        per work root."""
        root = os.fspath(work_root)
        if root in self._listening:
            return
        with self._lock:
            if root in self._listening:
                return
            self._forget_gone()
            directory = os.path.join(root, BELLS_DIR)
            os.makedirs(directory, mode=0o700, exist_ok=True)
            directory_fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY)
            listener = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
            try:
                # (one left by an earlier process of this pid is stale)
                name = f"{_own_prefix()}{os.getpid()}.sock"
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(name, dir_fd=directory_fd)
                listener.bind(_address(directory_fd, name))
            except OSError:
                listener.close()
                raise
            finally:
                os.close(directory_fd)
            listener.setblocking(False)
            self._selector.register(listener, selectors.EVENT_READ, rings_for)
            self._listening[root] = listener

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


_bell: Bell | None = None
_made = threading.Lock()


def bell() -> Bell:
    """This process's bell (made when first asked for: a process that never waits holds none)."""
    global _bell
    with _made:
        if _bell is None:
            _bell = Bell()
        return _bell


def ring_listeners(directory: str) -> None:
    """Wakes every process of this machine listening in `directory` (a work root's BELLS_DIR), at
    once, never waiting. The socket of one that has gone refuses: it is removed. One whose socket
    is full has a ring waiting already. Another machine's sockets (a work root on a shared file
    system) are left alone: no ring reaches them from here, and refusing says nothing of them."""
    try:
        directory_fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY)
    except OSError:
        return  # nobody has listened here
    ours = _own_prefix()
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as sender:
            sender.setblocking(False)
            for name in os.listdir(directory_fd):
                if not name.startswith(ours):
                    continue
                try:
                    sender.sendto(b"!", _address(directory_fd, name))
                except ConnectionRefusedError:
                    with contextlib.suppress(OSError):
                        os.unlink(name, dir_fd=directory_fd)
                except OSError:
                    pass
    finally:
        os.close(directory_fd)


def _own_prefix() -> str:
    """What this machine's sockets' names begin with."""
    return socket.gethostname().replace("/", "_") + "."
