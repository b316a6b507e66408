"""SQLite's writers in line: a write transaction waits for its turn where the next is woken at once.

SQLite has one writer at a time. A second one's BEGIN IMMEDIATE finds the lock taken and SQLite's
busy handler sleeps 1, 2, 5, 10 ... 100 ms between looks, so a waiter misses the moment the lock
is free: under a burst of submits a fifth of the CPUs stood idle and the p95 doubled
(docs/performance.md, issue 49). Here a write transaction first takes its turn:
- among this process's threads, a lock;
- among processes (web workers, the scheduler, commands), an flock of `<database>-writers`: the
  kernel wakes the next waiter when the holder lets go, and lets go for a holder that dies.

A turn waits at most `timeout` seconds (the database's own busy timeout); past it the transaction
goes on without one, to SQLite's busy handler, which says "database is locked" as it always did.
flock has no timeout of its own, so a process's wait for it is made on a thread of its own
(`_wait_for_flock`), which gives the lock back at once if nobody waits for it any more.
The line only decides who goes first: SQLite's own lock still keeps one writer at a time, so a
turn given wrongly (a race of the waiting thread with writers that come and go) costs a wait in
SQLite's busy handler, never a write.
"""

from __future__ import annotations

import fcntl
import os
import threading
import time

_lines: dict[str, WritersLine] = {}
_lines_lock = threading.Lock()


def line_of(database: str) -> WritersLine:
    """This process's place in the line of the database file's writers (a child made by fork gets its own)."""
    line = _lines.get(database)
    if line is None:
        with _lines_lock:  # (one line, one descriptor, however many threads ask first)
            line = _lines.get(database)
            if line is None:
                line = _lines[database] = WritersLine(writers_file(database))
    return line


def _forget_the_parents_lines() -> None:
    """In a child made by fork: the parent's lines are not this process's. Their descriptors are
    closed, so that a child outliving its parent cannot keep the parent's flock held (flock belongs
    to the open file, which the fork shared); the parent's hold is not touched by that."""
    global _lines_lock
    _lines_lock = threading.Lock()  # (another thread may have held it at the fork)
    for line in _lines.values():
        os.close(line.descriptor)
    _lines.clear()


os.register_at_fork(after_in_child=_forget_the_parents_lines)


def writers_file(database: str) -> str:
    return f"{database}-writers"


class WritersLine:
    def __init__(self, path: str) -> None:
        self.turn = threading.Lock()  # this process's writers, one at a time
        self.descriptor = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
        self.state = threading.Condition()
        self.flock_held = False  # this process holds the flock, for the writer whose turn it is
        self.wanted = False  # the writer whose turn it is waits for the flock
        self.waiter: threading.Thread | None = None

    def enter(self, timeout: float) -> bool:
        """Wait for this writer's turn, at most `timeout` seconds: whether it came."""
        deadline = time.monotonic() + timeout
        if not self.turn.acquire(timeout=timeout):
            return False
        with self.state:
            if not self.flock_held:
                try:
                    fcntl.flock(self.descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    self.flock_held = True
                except BlockingIOError:
                    self.wanted = True
                    if self.waiter is None:
                        self.waiter = threading.Thread(target=self._wait_for_flock, name="sqlite-writers", daemon=True)
                        self.waiter.start()
                    self.state.notify_all()
                    self.state.wait_for(lambda: self.flock_held, timeout=max(0.0, deadline - time.monotonic()))
                    self.wanted = False
            if self.flock_held:
                return True
        self.turn.release()
        return False

    def leave(self) -> None:
        with self.state:
            fcntl.flock(self.descriptor, fcntl.LOCK_UN)
            self.flock_held = False
        self.turn.release()

    def _wait_for_flock(self) -> None:
        while True:
            with self.state:
                self.state.wait_for(lambda: self.wanted and not self.flock_held)
            fcntl.flock(self.descriptor, fcntl.LOCK_EX)  # the thread waits here, the GIL let go
            with self.state:
                if self.flock_held:  # a writer of this process took it without waiting (the same open file)
                    continue
                if self.wanted:
                    self.flock_held = True
                    self.state.notify_all()
                else:  # the writer stopped waiting meanwhile
                    fcntl.flock(self.descriptor, fcntl.LOCK_UN)
