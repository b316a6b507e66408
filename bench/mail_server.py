"""A real SMTP server on a local port that can be made to stall: it speaks just enough SMTP to take
each message (kept in `messages`), or, while `hang` is set, accepts each connection and never says
a word (counted in `hung`), as a mail server that stalls does. bench/chaos.py's --mail-hang fault
and the outbox's tests (tests/metrics/conftest.py). Standard library only; it serves on threads of
its own."""

from __future__ import annotations

import socketserver
import threading


class MailServer:
    def __init__(self, host: str = "127.0.0.1") -> None:
        self.messages: list[bytes] = []
        self.hang = False
        self.hung = 0
        self._release = threading.Event()  # the stalled connections end with stop()
        server = self

        class Handler(socketserver.StreamRequestHandler):
            def handle(self) -> None:
                if server.hang:
                    server.hung += 1
                    server._release.wait(600)
                    return
                self.wfile.write(b"220 test ESMTP\r\n")
                data: list[bytes] | None = None
                for line in self.rfile:
                    if data is not None:  # the message, up to its lone dot
                        if line.rstrip(b"\r\n") == b".":
                            server.messages.append(b"".join(data))
                            data = None
                            self.wfile.write(b"250 queued\r\n")
                        else:
                            data.append(line)
                        continue
                    verb = line[:4].upper()
                    if verb == b"DATA":
                        data = []
                        self.wfile.write(b"354 go on\r\n")
                    elif verb == b"QUIT":
                        self.wfile.write(b"221 bye\r\n")
                        return
                    else:
                        self.wfile.write(b"250 ok\r\n")

        self._server = socketserver.ThreadingTCPServer((host, 0), Handler)
        self._server.daemon_threads = True
        self.host, self.port = host, self._server.server_address[1]
        self._thread = threading.Thread(target=self._server.serve_forever, args=(0.01,), name="mail", daemon=True)

    def start(self) -> MailServer:
        self._thread.start()
        return self

    def let_go(self) -> None:
        """The stalled connections end now, each closed without a word (a client that waits on
        one fails at once), and the server answers again."""
        self.hang = False
        self._release.set()

    def stop(self) -> None:
        self._release.set()
        self._server.shutdown()
        self._server.server_close()
