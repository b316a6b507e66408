"""`python manage.py serve`: the portal's web server (pages, API and websockets on one port).

granian (a Rust HTTP server) runs PAI_WEB_WORKERS processes of the ASGI app: request headers
must arrive within PAI_HTTP_HEADER_TIMEOUT, send buffers are bounded per connection, and
pai_portal.serving times the body in both directions. A worker that dies is started again; the
workers end when the master is gone, even by kill -9 (pai_portal.serving.exit_with_master).
"""

import os
import time
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError
from django.db import connections
from granian import Granian
from granian.constants import Interfaces
from granian.http import HTTP1Settings

from clusters.executors.port_probe import bind_refusal

MASTER_PID_VARIABLE = "PAI_SERVE_MASTER_PID"  # read by the workers: pai_portal.serving.exit_with_master
SHUTDOWN_GRACE_S = 5  # seconds in-flight requests get to finish when the server stops
PORT_FREE_WAIT_S = 15  # a previous server's workers end within SHUTDOWN_GRACE_S of their master


def wait_until_port_is_free(address: str, port: int, seconds: float) -> None:
    """granian listens with SO_REUSEPORT: it would share the port with a previous server's workers
    still running. A bind without that option fails while anyone listens there."""
    deadline = time.monotonic() + seconds
    while (error := bind_refusal(address, port)) is not None:
        if time.monotonic() > deadline:
            raise CommandError(f"{address}:{port} is in use ({error.strerror}): is another server running?")
        time.sleep(0.2)


class Command(BaseCommand):
    help = "Serve the portal (pages, API, websockets) with granian; settings from PAI_BIND, PAI_PORT, PAI_WEB_WORKERS."

    def add_arguments(self, parser):
        parser.add_argument("--bind", default=settings.PAI_BIND, help="address to listen on (PAI_BIND)")
        parser.add_argument("--port", type=int, default=settings.PAI_PORT, help="port (PAI_PORT)")
        parser.add_argument("--workers", type=int, default=settings.PAI_WEB_WORKERS, help="processes")

    def handle(self, *args: Any, **options: Any) -> None:
        wait_until_port_is_free(options["bind"], options["port"], PORT_FREE_WAIT_S)
        connections.close_all()  # the workers are forked: they must not share this process's connections
        os.environ[MASTER_PID_VARIABLE] = str(os.getpid())  # the workers end when this process is gone
        header_timeout_ms = min(60_000, max(1, round(settings.PAI_HTTP_HEADER_TIMEOUT * 1000)))
        Granian(
            "pai_portal.asgi:application",
            address=options["bind"],
            port=options["port"],
            interface=Interfaces.ASGINL,  # Channels' router has no lifespan protocol
            workers=options["workers"],
            http1_settings=HTTP1Settings(header_read_timeout=header_timeout_ms),
            respawn_failed_workers=True,
            workers_kill_timeout=SHUTDOWN_GRACE_S,  # else a stalled client holds a worker (and Ctrl-C) forever
            log_level=settings.PAI_LOG_LEVEL.lower(),  # type: ignore[arg-type]
        ).serve()
