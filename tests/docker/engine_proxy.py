"""A unix socket in front of the local engine: the requests it passed on, and streams it can cut."""

from __future__ import annotations

import contextlib
import re
import socket
import threading
from pathlib import Path

REQUEST = re.compile(rb"(?:GET|POST|PUT|DELETE|HEAD) (\S+) HTTP/1\.[01]\r\n")


class EngineProxy:
    """Passes every connection on to the engine; keeps each request's method and path (`requests`);
    `break_streams()` cuts the streams open whose path holds `streams` (the event streams unless
    told), and any asked for until `mend()`."""

    def __init__(self, path: Path, engine: str = "/var/run/docker.sock", streams: bytes = b"/events") -> None:
        self.path, self.engine, self.cut = path, engine, streams
        self.streams: list[socket.socket] = []
        self.requests: list[str] = []
        self.opened = 0  # streams of that path asked for
        self.refusing = False
        self.server = socket.socket(socket.AF_UNIX)
        self.server.bind(str(path))
        self.server.listen(64)
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self.server.accept()
            except OSError:
                return
            upstream = socket.socket(socket.AF_UNIX)
            upstream.connect(self.engine)
            threading.Thread(target=self._pump, args=(client, upstream, True), daemon=True).start()
            threading.Thread(target=self._pump, args=(upstream, client, False), daemon=True).start()

    def _pump(self, source: socket.socket, target: socket.socket, asks: bool) -> None:
        try:
            while data := source.recv(65536):
                if asks and self._asked(source, data):
                    break
                target.sendall(data)
        except OSError:
            pass
        finally:
            for end in (source, target):
                with contextlib.suppress(OSError):
                    end.shutdown(socket.SHUT_RDWR)

    def _asked(self, source: socket.socket, data: bytes) -> bool:
        """Notes the requests in `data`; True when one is a stream to cut now."""
        for match in REQUEST.finditer(data):
            line = match.group(0).decode("latin-1").strip()
            self.requests.append(line.rsplit(" ", 1)[0])
            if self.cut in match.group(1):
                self.opened += 1
                if self.refusing:
                    return True
                self.streams.append(source)
        return False

    def asked(self, method: str, fragment: str) -> int:
        """How many requests of that method had `fragment` in their path."""
        return sum(1 for request in self.requests if request.startswith(f"{method} ") and fragment in request)

    def break_streams(self) -> None:
        """Cuts the streams open, and any asked for until `mend()`."""
        self.refusing = True
        for stream in self.streams:
            with contextlib.suppress(OSError):
                stream.shutdown(socket.SHUT_RDWR)
        self.streams.clear()

    def mend(self) -> None:
        self.refusing = False

    def close(self) -> None:
        self.server.close()
