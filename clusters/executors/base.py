"""The executor interface. CONTRACT shared by the scheduler loop and every backend.

An executor never touches the database. The scheduler builds a TaskLaunch from the job's
spec and placement, calls start(), then poll() every pass until the task has exited (only the
tasks exits_seen() names, where the backend can tell).
"""

from __future__ import annotations

import abc
from dataclasses import dataclass, field
from datetime import datetime
from enum import StrEnum
from pathlib import Path
from typing import ClassVar

from catalogue import Message, joined

TaskKey = tuple[str, int]  # a task of a job by its (role, index)


@dataclass(frozen=True)
class NfsVolume:
    """An NFS export the node mounts itself (Docker: a `local` volume with type=nfs)."""

    server: str
    export: str  # the path on the server, the task's subfolder included
    options: str = ""  # further mount options (nfsvers=4.1,soft...); addr and ro/rw are added


@dataclass(frozen=True)
class Mount:
    host_path: str  # on the node; unused when `nfs` is set
    container_path: str
    read_only: bool = True
    nfs: NfsVolume | None = None
    storage: str = ""  # the storage config it comes from: a failure to mount it names it
    shared: bool = False  # other users' files too: never handed over to the task's own uid
    # A directory no task can write (the areas' root, a storage's folder, a task's work root) that
    # holds host_path: what lies below it is reached without following a link (a user's task may
    # swap a folder of its area for one at any time). '' = an admin's path, mounted as named.
    beneath: str = ""


@dataclass
class TaskLaunch:
    job_id: int  # Job primary key
    job_name: str  # full name `<owner>~<name>`
    job_attempt: int
    role: str
    index: int
    task_attempt: int
    image: str
    # The bash script the task runs (deployment preCommands + commands + postCommands, rendered:
    # the job's secrets in it). Executors hand it to the task as a file or descriptor that only the
    # task (and the portal) can read, never in an argv or an environment, and store it nowhere else.
    command: str
    env: dict[str, str]  # the runtime environment (jobs.protocol.runtime_env)
    cpu: int
    memory_mb: int
    shm_mb: int
    gpus: list[int]  # allocated GPU indices on the node
    ports: dict[str, list[int]]  # host ports by label
    log_path: Path
    work_dir: Path
    ip: str = ""  # the address prepare_job() gave this task (kept across task retries)
    mounts: list[Mount] = field(default_factory=list)
    registry_auth: dict[str, str] | None = None  # {username, password, registry}
    keep_on_failure: bool = False  # jobEnvs.isDebug
    # Public keys allowed to SSH into the task; None = no sshd (see jobs/ssh).
    ssh_authorized_keys: str | None = None
    # Secret values, never logged; the executor passes them to the task only.
    secret_env: dict[str, str] = field(default_factory=dict)
    # A job that spans nodes runs on each node's own network (docs/architecture.md, "Networks"):
    # the task binds its ports on the node's address.
    host_network: bool = False
    # Every job-mate's `<role>-<index>` -> address, its /etc/hosts lines (on a job network too:
    # its DNS names a container only once it runs).
    extra_hosts: dict[str, str] = field(default_factory=dict)
    # A process task's job-mates' work dirs (host paths): its sandbox shows its own work dir there
    # too, so a path one task names (`mpirun ... python3 $PWD/train.py`) is the same file's in every
    # task, as on Docker, where every task works in the same directory.
    work_dir_aliases: list[str] = field(default_factory=list)
    # Where no sandbox can be had, a process node still runs admins' tasks (and only theirs).
    owner_is_admin: bool = False
    # extraContainerOptions.infiniband: the node's /dev/infiniband devices (and IPC_LOCK) in the container.
    infiniband: bool = False
    owner_id: int = 0  # the owner's user id: the process executor's sandbox runs each user's tasks as their own uid
    # Interactive apps (clusters/executors/app_ports.py): this task's ports that serve one, opened to
    # its job's tasks and the portal alone; and every app of the job as its tasks address it
    # (`PAI_HOST_IP_*` of the serving task, its port), which a process task's network translates.
    app_ports: list[int] = field(default_factory=list)
    job_app_endpoints: list[tuple[str, int]] = field(default_factory=list)

    @property
    def hostname(self) -> str:
        return f"{self.role}-{self.index}"

    @property
    def labels(self) -> dict[str, str]:
        """Labels that identify the task on its backend, for reconcile after a restart."""
        return {
            "pai.job-id": str(self.job_id),
            "pai.job": self.job_name,
            "pai.job-attempt": str(self.job_attempt),
            "pai.role": self.role,
            "pai.index": str(self.index),
            "pai.task-attempt": str(self.task_attempt),
        }


@dataclass
class TaskHandle:
    """What the scheduler keeps to find the task again (stored in Task.executor_id)."""

    executor_id: str
    ip: str = ""


class Failure(StrEnum):
    """What went wrong on the platform's side, as an executor saw it. Executors know nothing of
    the exit spec: the scheduler maps each to its code (scheduling.exits)."""

    CREATE_FAILED = "create-failed"  # the container (or its network) could not be created
    START_PERMISSION_DENIED = "start-permission-denied"  # the entrypoint is not executable
    START_COMMAND_NOT_FOUND = "start-command-not-found"  # the entrypoint does not exist
    START_FAILED = "start-failed"  # any other start failure
    PORT_CONFLICT = "port-conflict"
    IMAGE_NOT_FOUND = "image-not-found"
    TASK_GONE = "task-gone"  # the container/process vanished (removed outside the portal)
    NODE_LOST = "node-lost"  # the node's engine does not answer
    STORAGE_MOUNT_FAILED = "storage-mount-failed"  # the node cannot mount a storage (no client, server down)
    TIME_LIMIT = "time-limit"  # the backend ended the task at the job's time limit (Slurm's TIMEOUT)


@dataclass
class TaskStatus:
    running: bool
    exit_code: int | None = None  # the process/container exit code once it has exited
    oom_killed: bool = False
    started_at: datetime | None = None
    finished_at: datetime | None = None
    # A failure the backend itself saw (image not found, engine lost...) and a sentence for the
    # user (a message; a str: an engine's own words); the scheduler turns it into its exit-spec code.
    failure: Failure | None = None
    diagnostics: str | Message = ""
    lost: bool = False  # the task is unknown to the backend (node lost / process gone)


@dataclass(frozen=True)
class ResourceSample:
    """One reading of a running task's resources. Counters (CPU seconds, bytes moved) are
    cumulative since the task started, so the sampler turns two readings into rates; None where
    the backend does not tell."""

    cpu_seconds: float
    memory_bytes: int
    memory_limit_bytes: int | None = None
    net_rx_bytes: int | None = None
    net_tx_bytes: int | None = None
    disk_read_bytes: int | None = None
    disk_write_bytes: int | None = None


@dataclass
class RunningTask:
    handle: TaskHandle
    labels: dict[str, str]


class Executor(abc.ABC):
    # Whether its calls go to an engine that may hang or not answer (Docker's): the scheduler runs
    # them on the node's lane (scheduling/executors.py), never on its own thread.
    calls_an_engine: ClassVar[bool] = False

    @abc.abstractmethod
    def start(self, launch: TaskLaunch) -> TaskHandle:
        """Start one task. Raises ExecutorError (saying which Failure) when it cannot start."""

    @abc.abstractmethod
    def poll(self, handle: TaskHandle) -> TaskStatus: ...

    def exits_seen(self, may_look_in_full: bool = True) -> set[str] | None:
        """The tasks (executor ids) that may have ended since the last call, or None where the
        backend cannot tell: the scheduler then polls each of the node's running tasks. A backend
        whose full look is due but not allowed (`may_look_in_full` False) puts it off to a later
        call and answers what it knows; one that can never tell answers None all the same."""
        return None

    def running_listed(self) -> set[str] | None:
        """Right after exits_seen() said None (a full look): the tasks (executor ids) the backend
        vouches are running, from one look at all of them, so that only the others are polled;
        None where it cannot vouch (each task is polled)."""
        return None

    @abc.abstractmethod
    def stop(self, handle: TaskHandle, *, keep: bool = False) -> None:
        """Stop and remove the task (idempotent); the scheduler also calls it on a task that has
        exited, once its exit is recorded. keep=True leaves the container for inspection (isDebug)."""

    def stopped(self, handle: TaskHandle) -> bool:
        """Whether stop(handle) has nothing left to ask the node: this executor removed the task's
        container already (a task's stop, then its job's in the same pass). Asks the node nothing."""
        return False

    def terminate(self, handle: TaskHandle, grace_s: int) -> None:  # noqa: B027
        """Ask the task to end: SIGTERM to its processes now, and SIGKILL `grace_s` later where
        the node can see to it (the scheduler calls stop() at the deadline regardless). Returns at
        once; idempotent (a second call neither signals again nor moves the deadline). The default
        does nothing: such a backend's tasks are stopped at the deadline."""

    @abc.abstractmethod
    def list_running(self) -> list[RunningTask]:
        """Every task this backend holds for the portal, with its labels (reconcile): running ones
        and exited ones not yet removed by stop()."""

    def prepare_job(
        self,
        job_id: int,
        job_name: str,
        tasks: list[TaskKey],
        node_address: str,
        *,
        host_network: bool = False,
    ) -> dict[TaskKey, str]:
        """Called once before a job's tasks start on this node (e.g. create the per-job network).

        Returns the IP each (role, index) will have, so the runtime environment (host lists)
        can be built before any task starts: where the backend gives the job a network of its own
        (`job_network`), its addresses; else, as always with host_network (the job spans nodes: its
        tasks use the node's network), the node's address.
        """
        own = None if host_network else self.job_network(job_id, job_name, tasks)
        return own if own is not None else {task: node_address for task in tasks}

    def job_network(self, job_id: int, job_name: str, tasks: list[TaskKey]) -> dict[TaskKey, str] | None:
        """The job's own network on this node, made once (prepare_job), and each task's address on
        it; None (the default): the backend gives a job no network of its own."""
        return None

    def sample(self, handles: list[TaskHandle]) -> dict[str, ResourceSample]:
        """The resources of these tasks now, by executor id; tasks not running (or that the backend
        cannot tell about) are left out. One call per node and sampling round, so a backend reads
        what it can in one go. Called by the sampler's thread, never by the scheduler's pass."""
        return {}

    def ping(self) -> None:  # noqa: B027
        """Raise when the node's backend does not answer (the scheduler's heartbeat)."""

    def cleanup_job(self, job_id: int, *, keep: bool = False) -> None:  # noqa: B027
        """Called after a job finished or stopped (e.g. remove the network); raises when it could
        not finish (it is called again, until it does: reconcile sweeps leftover_jobs())."""

    def leftover_jobs(self) -> set[int]:
        """The jobs whose node-side leftovers (networks) this node holds: reconcile cleans up those
        of jobs that no longer run here (a clean-up that failed, or that a crash never sent)."""
        return set()


class ExecutorError(Exception):
    """A task could not start; `failure` says what went wrong on the platform's side."""

    def __init__(
        self, message: str | Message | list[Message], failure: Failure = Failure.CREATE_FAILED, *, storage: str = ""
    ):
        # `messages`: what it says as messages (a node's down reason), when it is one of the portal's own.
        self.messages = [message] if isinstance(message, Message) else [] if isinstance(message, str) else message
        super().__init__(joined(self.messages) if self.messages else message)
        self.failure = failure
        self.storage = storage  # the storage config a STORAGE_MOUNT_FAILED could not mount, when known

    @property
    def diagnostics(self) -> str | Message:
        """What it says as a task's diagnostics: its message (its parts as one), else its words."""
        if not self.messages:
            return str(self)
        return self.messages[0] if len(self.messages) == 1 else Message.of("exit.parts", parts=self.messages)
