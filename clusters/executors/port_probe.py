"""Whether a port is free, asked by binding it: the executors before a task's network takes its
ports, `manage.py serve` before granian listens. Standard library only."""

from __future__ import annotations

import socket


def bind_refusal(address: str, port: int, kind: socket.SocketKind = socket.SOCK_STREAM) -> OSError | None:
    """None when `address:port` could be bound now, else why not. With SO_REUSEADDR, as a server
    binds: a connection in TIME_WAIT is no holder, a listener is (without SO_REUSEPORT)."""
    family = socket.AF_INET6 if ":" in address else socket.AF_INET
    with socket.socket(family, kind) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind((address, port))
        except OSError as error:
            return error
    return None
