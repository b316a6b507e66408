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

# Why a task could not start, in the portal's words (an ExecutorError's message, the task's exit
# diagnostics): `said` is what an engine, the kernel or a library said, as it said it.
NO_SANDBOX = Text(
    "exit.start.no_sandbox",
    "this process node cannot sandbox tasks (%(problem)s), so it runs only admins' jobs: submit to a virtual "
    "cluster with Docker nodes, or ask an admin to install bubblewrap and passt",
)
NO_NFS = Text(
    "exit.start.no_nfs",
    "storage %(storage)s: a process node cannot mount NFS; run the job on Docker nodes, or mount the export on "
    "every node and declare it as a host path",
)
PORT_HELD = Text("exit.start.port_held", "port %(port)s on %(address)s is held by another program: %(said)s")
NO_PROCESS = Text("exit.start.no_process", "cannot start the task's process: %(said)s")
NO_LIMITS = Text("exit.start.no_limits", "cannot set the task's resource limits: %(said)s")
NO_CONTAINER = Text("exit.start.no_container", "could not create the task's container: %(said)s")
NO_CONTAINER_NAMED = Text("exit.start.no_container_named", "could not create the container %(name)s")
BAD_IMAGE = Text(
    "exit.start.bad_image",
    "image '%(image)s' is not a valid image reference (%(said)s): correct the image in the job's config",
)
CONTAINER_NOT_STARTED = Text("exit.start.container_not_started", "the task's container could not start: %(said)s")
CLEANUP_FAILED = Text("exit.start.cleanup_failed", "cleaning up job %(job)s on %(url)s: %(said)s")
CLEANUP_FAILED_LOCALLY = Text(
    "exit.start.cleanup_failed_locally",
    "cleaning up job %(job)s on the local engine: %(said)s",
)
NETWORK_TOO_SMALL = Text(
    "exit.start.network_too_small",
    "%(count)s tasks on one node: a job network holds at most %(most)s",
)
NO_NETWORK = Text("exit.start.no_network", "could not create the job's network: %(said)s")
NO_SUBNET = Text("exit.start.no_subnet", "no free /24 subnet left in %(pool)s for the job's network")
NO_IPV4_SUBNET = Text("exit.start.no_ipv4_subnet", "network %(network)s has no IPv4 subnet")
# clusters.executors.docker_mounts: a storage the engine (or the portal, staging it) could not mount
UNSAFE_MOUNT = Text(
    "exit.start.unsafe_mount",
    "%(path)s cannot be mounted safely at %(target)s on node %(node)s (%(problem)s): a folder inside a "
    "storage area needs a portal that mounts it itself",
)
CANNOT_MOUNT = Text("exit.start.cannot_mount", "cannot mount %(target)s: %(said)s")
CANNOT_MOUNT_AT = Text("exit.start.cannot_mount_at", "cannot mount %(path)s at %(target)s: %(said)s")
STORAGE_NOT_MOUNTED = Text(
    "exit.start.storage_not_mounted",
    "storage %(storage)s could not be mounted at %(target)s on node %(node)s: %(said)s",
)
FILE_STORE_NOT_MOUNTED = Text(
    "exit.start.file_store_not_mounted",
    "%(path)s (the portal's file store) could not be mounted at %(target)s on node %(node)s: %(said)s",
)
SOME_STORAGE_NOT_MOUNTED = Text(
    "exit.start.some_storage_not_mounted", "a storage could not be mounted on node %(node)s: %(said)s"
)
# clusters.executors.staging.engine_problem: why mounts staged here would not be the engine's
NOT_ROOT = Text("exit.staging.not_root", "the portal does not run as root")
ENGINE_OTHER_PIDS = Text("exit.staging.other_pids", "the engine runs in another PID namespace")
ENGINE_OTHER_MOUNTS = Text("exit.staging.other_mounts", "the engine runs in another mount namespace")
ENGINE_UNSEEN = Text("exit.staging.unseen", "cannot tell where the engine at %(socket)s mounts (%(said)s)")
# clusters.executors.docker_images: a pull that failed, never in the registry's own words
PULL_FAILED = Text("exit.pull.failed", "pulling image %(image)s from registry %(registry)s failed: %(why)s")
PULL_CREDENTIALS_REFUSED = Text("exit.pull.credentials_refused", "the registry refused the credentials")
PULL_NEEDS_CREDENTIALS = Text(
    "exit.pull.needs_credentials", "image not found, or the registry needs credentials (authFile)"
)
PULL_UNREACHABLE = Text("exit.pull.unreachable", "the image is not on the node and the registry cannot be reached")
PULL_HTTP = Text("exit.pull.http", "the registry answered HTTP %(status)s")
PULL_NOT_FOUND = Text("exit.pull.not_found", "image not found in the registry")
PULL_OTHERWISE = Text("exit.pull.otherwise", "the engine could not pull it")
# clusters.executors.sandbox / netns: why a process node cannot sandbox tasks (NO_SANDBOX's problem)
NO_BWRAP = Text(
    "exit.sandbox.no_bwrap", "bubblewrap (%(path)s) is not installed on this node (Debian: apt-get install bubblewrap)"
)
NO_TOOL = Text("exit.sandbox.no_tool", "%(tool)s is not installed on this node (Debian: apt-get install %(package)s)")
BWRAP_CANNOT_RUN = Text("exit.sandbox.bwrap_cannot_run", "bubblewrap cannot run here: %(said)s")
BWRAP_NO_SANDBOX = Text(
    "exit.sandbox.bwrap_no_sandbox", "bubblewrap cannot make a sandbox here (user namespaces off?): %(said)s"
)
NO_OWN_NETWORK = Text("exit.sandbox.no_own_network", "tasks cannot get a network of their own here: %(said)s")
NO_OWN_NETWORK_TUN_MISSING = Text(
    "exit.sandbox.no_own_network.tun_missing",
    "tasks cannot get a network of their own here: %(said)s (%(device)s is missing)",
)
NO_OWN_NETWORK_TUN_PRIVATE = Text(
    "exit.sandbox.no_own_network.tun_private",
    "tasks cannot get a network of their own here: %(said)s (%(device)s is root's alone; give it the "
    "distributions' usual 0666: chmod 666 %(device)s)",
)
LOOPBACK_REACHED = Text(
    "exit.sandbox.loopback_reached", "a task's own network does not keep the host's loopback out here: %(said)s"
)
