"""Why a node's engine does not answer, in plain words (codes): a node's down reason says them."""

from __future__ import annotations

from catalogue import Text

DOCKER_SILENT = Text("node.docker_silent", "the Docker engine at %(url)s does not answer (%(cause)s)")
DOCKER_SOCKET_SILENT = Text(
    "node.docker_socket_silent", "the Docker engine at the local socket does not answer (%(cause)s)"
)
# clusters.executors.plain_errors: the cause, whatever layer of the client's error carries it
REFUSED = Text("node.cause.refused", "connection refused: nothing listens there")
NO_HOST_NAME = Text("node.cause.no_host_name", "its host name does not resolve")
NO_ROUTE = Text("node.cause.no_route", "no route to the host")
UNREACHABLE = Text("node.cause.unreachable", "its network is unreachable")
NO_SOCKET = Text("node.cause.no_socket", "no socket at that path")
PERMISSION_DENIED = Text("node.cause.permission_denied", "permission denied")
CLOSED = Text("node.cause.closed", "the connection was closed before an answer")
TIMED_OUT = Text("node.cause.timed_out", "timed out")
TIMED_OUT_AFTER = Text("node.cause.timed_out_after", "timed out after %(seconds)s s")
HTTP = Text("node.cause.http", "it answered HTTP %(code)s")
HTTP_SAYING = Text("node.cause.http_saying", "it answered HTTP %(code)s (%(words)s)")

# How a task ended, as its executor saw it (a TaskStatus's diagnostics: jobs.protocol.texts.EXITED's said).
OUT_OF_MEMORY = Text("exit.out_of_memory", "killed: out of memory (the task's limit is %(mb)s MB, memoryMB)")
CONTAINER_GONE = Text("exit.container_gone", "the task's container %(id)s is gone (removed outside the portal)")
ENGINE_SILENT = Text("exit.engine_silent", "the node's Docker engine (%(url)s) does not answer: %(cause)s")
ENGINE_SOCKET_SILENT = Text(
    "exit.engine_socket_silent", "the node's Docker engine (local socket) does not answer: %(cause)s"
)
NEVER_STARTED = Text("exit.never_started", "the task's container was created but never started")
PROCESS_GONE = Text("exit.process_gone", "the task's process is gone")
PARTS = Text("exit.parts", "%(parts)s", join="; ")  # an ExecutorError's several messages as one
PORT_TAKEN = Text("exit.port_taken", "a port of the task was taken on the node as it started")
