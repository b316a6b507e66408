"""The ringing side of bells.py: what a supervisor (or a web process, jobs.wake) sends to the
processes listening in a work root's BELLS_DIR. Light standard library only (os, socket,
contextlib): the supervisors and Slurm's task wrapper import it."""

from __future__ import annotations

import contextlib
import os
import socket

BELLS_DIR = "bells"  # in a work root (the portal's own: tasks never see it)
# What rang: a task's end (a supervisor, an engine's event), or a user's change (jobs.wake).
EXITS, CHANGES = "exits", "changes"


def socket_in(directory_fd: int, name: str) -> str:
    """The Unix socket `name` in the directory open as `directory_fd`, reached through /proc so that
    no path length limit applies (a Unix socket's path holds at most 107 bytes)."""
    return f"/proc/self/fd/{directory_fd}/{name}"


def ring_listeners(directory: str) -> None:
    """Wakes every process of this machine listening in `directory` (a work root's BELLS_DIR), at
    once, never waiting. The socket of one that has gone refuses: it is removed. One whose socket
    is full has a ring waiting already. Another machine's sockets (a work root on a shared file
    system) are left alone: no ring reaches them from here, and refusing says nothing of them."""
    try:
        directory_fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY)
    except OSError:
        return  # nobody has listened here
    ours = own_prefix()
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as sender:
            sender.setblocking(False)
            for name in os.listdir(directory_fd):
                if not name.startswith(ours):
                    continue
                try:
                    sender.sendto(b"!", socket_in(directory_fd, name))
                except ConnectionRefusedError:
                    with contextlib.suppress(OSError):
                        os.unlink(name, dir_fd=directory_fd)
                except OSError:
                    pass
    finally:
        os.close(directory_fd)


def own_prefix() -> str:
    """What this machine's sockets' names begin with."""
    return socket.gethostname().replace("/", "_") + "."
