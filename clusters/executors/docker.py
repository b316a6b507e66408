"""The Docker executor: each task is a container on a per-job network of one Docker engine.

One instance per node (its engine is the node's docker_url; empty = the local socket). It never
touches the database: the scheduler hands it TaskLaunch values and keeps the TaskHandles.

- job_network() (prepare_job's) creates the job's user-defined network (docker_networks.py) with its
  own /24, so each task gets a fixed address known before any container starts (the runtime environment
  lists them). A job that spans nodes gets no network: its tasks run on the node's own network
  (TaskLaunch.host_network), at the node's address, their job-mates' names in /etc/hosts.
- start() creates the container (limits, shm, published ports, GPUs, mounts, DNS alias and
  hostname `<role>-<index>`), copies the runtime scripts and the task's command into
  /pai/runtime (its mounts: docker_mounts.py), starts it and has its log followed into the
  task's log file (docker_logs.py: on the process's one stream loop, no thread per container).
- exits_seen() names the containers that died since it was last asked, from the engine's event
  stream (docker_events.py): the scheduler inspects those, not every task each pass (every one
  where the stream cannot vouch: a full look).
- Containers carry labels (TaskLaunch.labels + a namespace marker), so list_running() finds them
  again after a scheduler restart (and follows the logs of those running), and a start() of a
  task whose container already exists adopts it instead of starting a second one.
"""

from __future__ import annotations

import contextlib
import io
import logging
import re
import shutil
import tarfile
import time
from collections.abc import Iterable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import docker
import requests
from docker.errors import APIError, ImageNotFound, NotFound
from docker.types import DeviceRequest, LogConfig, Ulimit
from docker.types import Mount as DockerMount

from catalogue import Message
from clusters.executors.base import (
    Executor,
    ExecutorError,
    Failure,
    Mount,
    ResourceSample,
    RunningTask,
    TaskHandle,
    TaskKey,
    TaskLaunch,
    TaskStatus,
)
from clusters.executors.docker_engine import (
    DEFAULT_NAMESPACE,
    ENGINE_ERRORS,
    MARKER_LABEL,
    Engine,
    explain,
    failure_of,
    marker,
)
from clusters.executors.docker_events import ExitWatch
from clusters.executors.docker_images import INVALID_REFERENCE, pull
from clusters.executors.docker_logs import ContainerLogs
from clusters.executors.docker_mounts import STAGING_LABEL, MountStaging, docker_mount, storage_failure
from clusters.executors.docker_networks import JobNetworks, NetworkGone, network_gone
from clusters.executors.docker_removal import CONTAINER_RUNTIME_DIR, SCRIPT_NAME, Removals
from clusters.executors.interfaces import interface_variables
from clusters.executors.limits import DEFAULT_PIDS_LIMIT
from clusters.executors.logcap import DEFAULT_LOG_MAX_BYTES
from clusters.executors.plain_errors import engine_lost, engine_silent
from clusters.executors.stats import from_containers

log = logging.getLogger("pai.executors.docker")

RUNTIME_DIR = Path(__file__).resolve().parent / "runtime"
JOB_NETWORK_INTERFACE = "eth0"  # a container's interface on its (one) job network
ENTRYPOINT = ["/bin/sh", f"/{CONTAINER_RUNTIME_DIR}/entrypoint.sh"]
DEFAULT_WORK_DIR = "/pai/work"

LOG_PATH_LABEL = "pai.log-path"
KEPT_SUFFIX = "-debug"  # the name of a container stop(keep=True) left for inspection

# Exit codes of a container that could not start (docker run's convention).
START_FAILURES = {
    125: Failure.CREATE_FAILED,
    126: Failure.START_PERMISSION_DENIED,
    127: Failure.START_COMMAND_NOT_FOUND,
}
PING_TIMEOUT_S = 5
RUNNING_STATES = {"running", "restarting", "paused"}  # a container's states while its task runs


class DockerExecutor(Executor):
    calls_an_engine = True

    def __init__(
        self,
        docker_url: str | None = None,
        *,
        address: str = "127.0.0.1",
        namespace: str | None = None,
        subnet_pool: str | None = None,
        timeout: int = 120,
        log_max_bytes: int = DEFAULT_LOG_MAX_BYTES,
        pids_limit: int = DEFAULT_PIDS_LIMIT,
        mounts_dir: Path | None = None,
        unlimited_memlock: bool = False,
    ):
        self.docker_url = docker_url or None
        self._terminated: set[str] = set()  # containers sent SIGTERM (terminate), until removed
        self.pids_limit = pids_limit
        # memlock unlimited (RDMA pins its buffers); off where the engine may not raise it (rootless).
        self.unlimited_memlock = unlimited_memlock
        self.address = address  # the node's address: published ports bind here
        self.namespace = namespace or DEFAULT_NAMESPACE
        self.timeout = timeout
        self.engine = Engine(self.docker_url, timeout=timeout)
        self.networks = JobNetworks(self.engine, namespace=self.namespace, subnet_pool=subnet_pool, address=address)
        self.logs = ContainerLogs(self.engine, log_max_bytes)
        self.exits = ExitWatch(self.docker_url, self.namespace, MARKER_LABEL)  # (follows once asked)
        # Where a local engine's bind sources below a user-writable folder are staged.
        self.staging = MountStaging(
            mounts_dir,
            namespace=self.namespace,
            socket_path=(self.docker_url or "unix:///var/run/docker.sock").removeprefix("unix://"),
            address=address,
        )
        self.removals = Removals(self.engine, self.staging, self.logs, local=self.local_engine)

    # -- engine ------------------------------------------------------------------------------

    @property
    def api(self) -> docker.APIClient:
        """The low-level client, made on first use (an engine that is down must not break import)."""
        return self.engine.api

    def ping(self) -> None:
        """A short-timeout ping on a client of its own, so a hung engine cannot hold the loop."""
        try:
            self.engine.ping(PING_TIMEOUT_S)
        except ENGINE_ERRORS as exc:
            log.info("ping of the Docker engine %s failed: %r", self.docker_url or "local socket", exc)
            raise ExecutorError(engine_silent(self.docker_url, exc, PING_TIMEOUT_S), Failure.NODE_LOST) from exc

    # -- names -------------------------------------------------------------------------------

    def container_name(self, launch: TaskLaunch) -> str:
        raw = (
            f"{self.namespace}-{launch.job_id}-{launch.role}-{launch.index}-{launch.job_attempt}-{launch.task_attempt}"
        )
        return re.sub(r"[^A-Za-z0-9_.-]", "_", raw)

    # -- job network -------------------------------------------------------------------------

    def job_network(self, job_id: int, job_name: str, tasks: list[TaskKey]) -> dict[TaskKey, str]:
        return self.networks.addresses(job_id, job_name, tasks)

    def cleanup_job(self, job_id: int, *, keep: bool = False) -> None:
        try:
            containers = self.api.containers(
                all=True, filters={"label": [marker(self.namespace), f"pai.job-id={job_id}"]}
            )
            if not keep:
                for container in containers:
                    self.removals.remove(container["Id"])
            if keep and containers:
                return  # the kept containers stay attached to their network
            self.networks.remove(job_id)
        except ENGINE_ERRORS as exc:
            said = explain(exc)
            failed = (
                Message.of("exit.start.cleanup_failed", job=job_id, url=self.docker_url, said=said)
                if self.docker_url
                else Message.of("exit.start.cleanup_failed_locally", job=job_id, said=said)
            )
            raise ExecutorError(failed, failure_of(exc)) from exc

    def leftover_jobs(self) -> set[int]:
        return self.networks.leftover_jobs()

    # -- tasks -------------------------------------------------------------------------------

    def start(self, launch: TaskLaunch) -> TaskHandle:
        """The task's container, created and started. An engine that may not raise locked memory
        (rootless, or itself in a container without CAP_SYS_RESOURCE) refuses the container: this
        executor stops asking for it and starts the task again, once."""
        try:
            return self._start_on_network(launch)
        except _MemlockRefused as refused:
            log.warning("the engine may not raise locked memory (%s): tasks keep its default from now on", refused)
            return self._start_on_network(launch)

    def _start_on_network(self, launch: TaskLaunch) -> TaskHandle:
        """Its job network gone meanwhile (removed by a clean-up that a killed scheduler had sent,
        or anyone's hand) is made again, on the subnet that holds the task's address, and the start
        tried once more."""
        try:
            return self._start(launch)
        except NetworkGone as gone:
            log.warning("%s; making it again (or one of it) for %s", gone, launch.hostname)
            self.networks.make_again(launch)
        try:
            return self._start(launch)
        except NetworkGone as gone:
            raise ExecutorError(Message.of("exit.start.no_container", said=str(gone)), Failure.CREATE_FAILED) from gone

    def _start(self, launch: TaskLaunch) -> TaskHandle:
        name = self.container_name(launch)
        # A local engine bind-mounts the task's runtime files from the node; a remote one gets
        # them copied into the container before it starts.
        runtime_dir = write_runtime_dir(launch) if self.local_engine else None
        mounts, staged = self.staging.stage(launch.mounts, name) if self.local_engine else (launch.mounts, None)
        asked_memlock = self.unlimited_memlock
        try:
            created = self._create_or_adopt(name, launch, runtime_dir, mounts, staged)
        except ExecutorError:
            self.staging.release(staged)
            raise
        except ENGINE_ERRORS as exc:
            self.staging.release(staged)
            if network_gone(launch, exc):
                raise NetworkGone(explain(exc)) from exc
            unmounted = storage_failure(launch, explain(exc), namespace=self.namespace, address=self.address)
            if unmounted is not None:
                raise unmounted from exc
            if INVALID_REFERENCE in explain(exc):  # the engine's own words, about the name alone
                raise ExecutorError(
                    Message.of("exit.start.bad_image", image=launch.image, said=explain(exc)), Failure.IMAGE_NOT_FOUND
                ) from exc
            raise ExecutorError(Message.of("exit.start.no_container", said=explain(exc)), failure_of(exc)) from exc
        finally:
            self.staging.created(staged)
        if isinstance(created, TaskHandle):
            self.staging.release(staged)  # this task's container was there already, with mounts of its own
            return created
        try:
            if runtime_dir is None:
                self.api.put_archive(created, "/", runtime_archive(launch))
            self.api.start(created)
        except (APIError, requests.exceptions.RequestException) as exc:
            if network_gone(launch, exc):
                self.removals.remove(created)  # (made for a network that is no more)
                raise NetworkGone(explain(exc)) from exc
            if asked_memlock and MEMLOCK_REFUSED in explain(exc):  # (tasks started side by side: each)
                self.removals.remove(created)
                self.unlimited_memlock = False
                raise _MemlockRefused(explain(exc)) from exc
            raise self._start_failure(created, launch, exc) from exc
        self.logs.follow(created, launch.log_path, append=True)
        return TaskHandle(executor_id=created, ip=launch.ip or self._container_ip(created))

    @property
    def local_engine(self) -> bool:
        return not self.docker_url or self.docker_url.startswith(("unix://", "/"))

    def _create_or_adopt(
        self, name: str, launch: TaskLaunch, runtime_dir: Path | None, mounts: list[Mount], staged: Path | None
    ) -> str | TaskHandle:
        """The new container's id; or the handle of this very task's container when it exists
        already (a scheduler restart between start and recording): never a second one."""
        for _ in range(3):
            try:
                return self._create(name, launch, runtime_dir, mounts, staged)
            except ImageNotFound:
                pull(self.api, launch.image, launch.registry_auth)
            except APIError as exc:
                if exc.status_code != 409:  # 409: the name is taken
                    raise
                adopted = self._adopt(name, launch)
                if adopted is not None:
                    return adopted
        raise ExecutorError(Message.of("exit.start.no_container_named", name=name))

    def _adopt(self, name: str, launch: TaskLaunch) -> TaskHandle | None:
        try:
            info = self.api.inspect_container(name)
        except NotFound:
            return None
        if info["State"]["Status"] == "created":  # never started: its runtime files may be missing
            self.removals.remove(info["Id"])
            return None
        log.info("adopting existing container %s for %s", name, launch.hostname)
        if info["State"]["Running"]:
            self.logs.follow(info["Id"], launch.log_path, append=False)
        else:
            self.logs.copy_whole(info["Id"], launch.log_path)
        return TaskHandle(executor_id=info["Id"], ip=launch.ip or _ip_of(info))

    def _create(
        self, name: str, launch: TaskLaunch, runtime_dir: Path | None, mounts: list[Mount], staged: Path | None
    ) -> str:
        env = task_environment(launch)
        work_dir = launch.env.get("PAI_WORK_DIR") or DEFAULT_WORK_DIR
        ports = sorted({port for label_ports in launch.ports.values() for port in label_ports})
        device_requests = None
        if launch.gpus:  # a node without GPUs never asks the engine for any
            device_requests = [
                DeviceRequest(driver="nvidia", device_ids=[str(gpu) for gpu in launch.gpus], capabilities=[["gpu"]])
            ]
        host_config = self.api.create_host_config(
            **self.networks.host_options(launch, ports),
            init=True,  # docker-init as PID 1: forwards signals, reaps sshd's children
            nano_cpus=int(min(launch.cpu, self.engine.cpus()) * 1_000_000_000),
            mem_limit=f"{launch.memory_mb}m",
            memswap_limit=f"{launch.memory_mb}m",
            shm_size=f"{launch.shm_mb}m",
            pids_limit=self.pids_limit,
            log_config=LogConfig(type=LogConfig.types.JSON, config=self.logs.engine_options),
            device_requests=device_requests,
            **device_options(launch, unlimited_memlock=self.unlimited_memlock),
            mounts=[docker_mount(m, self.namespace) for m in mounts]
            + (
                [DockerMount(target=f"/{CONTAINER_RUNTIME_DIR}", source=str(runtime_dir), type="bind", read_only=True)]
                if runtime_dir is not None
                else []
            ),
        )
        labels = {**launch.labels, MARKER_LABEL: self.namespace, LOG_PATH_LABEL: str(launch.log_path)}
        if staged is not None:
            labels[STAGING_LABEL] = str(staged)
        created = self.api.create_container(
            launch.image,
            entrypoint=ENTRYPOINT,
            command=[],
            name=name,
            hostname=launch.hostname[:63],
            environment=env,
            working_dir=work_dir,
            labels=labels,
            ports=[] if launch.host_network else ports,
            host_config=host_config,
            networking_config=self.networks.endpoint(launch),
        )
        return str(created["Id"])

    def _start_failure(self, container_id: str, launch: TaskLaunch, exc: Exception) -> ExecutorError:
        reason = explain(exc)
        failure = Failure.CREATE_FAILED
        lowered = reason.lower()
        unmounted = storage_failure(launch, reason, namespace=self.namespace, address=self.address)
        if unmounted is not None:
            if not launch.keep_on_failure:
                self.removals.remove(container_id)
            return unmounted
        if "port is already allocated" in lowered or ("bind" in lowered and "address already in use" in lowered):
            failure = Failure.PORT_CONFLICT
        else:
            try:
                exit_code = self.api.inspect_container(container_id)["State"]["ExitCode"]
                failure = START_FAILURES.get(exit_code, Failure.CREATE_FAILED)
            except (APIError, requests.exceptions.RequestException):
                pass
        if not launch.keep_on_failure:
            self.removals.remove(container_id)
        return ExecutorError(Message.of("exit.start.container_not_started", said=reason), failure)

    def poll(self, handle: TaskHandle) -> TaskStatus:
        try:
            info = self.api.inspect_container(handle.executor_id)
        except NotFound:
            return TaskStatus(
                running=False,
                lost=True,
                failure=Failure.TASK_GONE,
                diagnostics=Message.of("exit.container_gone", id=handle.executor_id[:12]),
            )
        except ENGINE_ERRORS as exc:
            return TaskStatus(
                running=False,
                lost=True,
                failure=Failure.NODE_LOST,
                diagnostics=engine_lost(self.docker_url, exc, self.timeout),
            )
        state = info["State"]
        started_at = _parse_time(state.get("StartedAt"))
        if state["Running"] or state["Status"] in RUNNING_STATES:
            self.exits.still_running(handle.executor_id)
            return TaskStatus(running=True, started_at=started_at)
        if state["Status"] == "created":
            return TaskStatus(
                running=False,
                lost=True,
                failure=Failure.TASK_GONE,
                diagnostics=Message.of("exit.never_started"),
            )
        self.logs.exited(handle.executor_id, info["Config"]["Labels"].get(LOG_PATH_LABEL))
        self.removals.exited(info)  # (its removal asks the engine no more)
        init_failure = ""
        if state.get("ExitCode") in START_FAILURES and not state.get("Error"):
            # docker-init could not exec the entrypoint (no /bin/sh in the image): it says so last.
            with contextlib.suppress(APIError, requests.exceptions.RequestException):
                tail = self.api.logs(handle.executor_id, stdout=True, stderr=True, tail=3).decode(errors="replace")
                init_failure = next((line for line in tail.splitlines() if line.startswith("[FATAL tini")), "")
        return exited_status(info, init_failure=init_failure)

    def exits_seen(self, may_look_in_full: bool = True) -> set[str] | None:
        return self.exits.seen(may_look_in_full)

    def running_listed(self) -> set[str] | None:
        """One listing of the engine's running containers where the full look just handed over
        may take its word (its event stream was open since the last look): 20 inspections of a
        node's tasks become a call. None: poll each (a failed listing too: each poll then says)."""
        try:
            listed = self.api.containers(filters={"label": marker(self.namespace), "status": "running"})
        except ENGINE_ERRORS:
            return None
        return self.exits.listing_vouches({container["Id"] for container in listed})

    def sample(self, handles: list[TaskHandle]) -> dict[str, ResourceSample]:
        return from_containers(self.api, [handle.executor_id for handle in handles])

    def terminate(self, handle: TaskHandle, grace_s: int) -> None:
        """SIGTERM to the container's main process (the task's bash: a trap there sees it); the
        scheduler removes the container at the deadline (stop()). Signalled once per executor."""
        if handle.executor_id in self._terminated:
            return
        with contextlib.suppress(APIError, requests.exceptions.RequestException):
            self.api.kill(handle.executor_id, signal="SIGTERM")
        self._terminated.add(handle.executor_id)

    def stopped(self, handle: TaskHandle) -> bool:
        return self.removals.removed(handle.executor_id)

    def stop(self, handle: TaskHandle, *, keep: bool = False) -> None:
        self._terminated.discard(handle.executor_id)
        if self.stopped(handle):
            return  # removed already: nothing to kill, rename or remove (keep or not)
        if keep:
            # Frees the resources, keeps the file system; it may have exited or gone already.
            with contextlib.suppress(APIError, requests.exceptions.RequestException):
                self.api.kill(handle.executor_id)
            # Labels cannot change, names can: a kept container is no task of ours any more, so
            # list_running() leaves it out and a restarted scheduler does not remove it.
            with contextlib.suppress(APIError, requests.exceptions.RequestException):
                name = self.api.inspect_container(handle.executor_id)["Name"].lstrip("/")
                if not name.endswith(KEPT_SUFFIX):
                    self.api.rename(handle.executor_id, name + KEPT_SUFFIX)
            self.logs.finish(handle.executor_id)
            return
        self.removals.remove(handle.executor_id, script=True)

    def list_running(self) -> list[RunningTask]:
        tasks = []
        leftovers = self.staging.leftovers() if self.local_engine else set()
        containers = self.api.containers(all=True, filters={"label": marker(self.namespace)})
        self.staging.release_unused(leftovers, containers)
        for container in containers:
            if any(name.endswith(KEPT_SUFFIX) for name in container.get("Names") or []):
                continue  # kept for debugging (isDebug): not a task any more
            labels = dict(container.get("Labels") or {})
            if container.get("State") in RUNNING_STATES and labels.get(LOG_PATH_LABEL):
                # (after a restart this is where the executor first meets it: it follows the log from here)
                self.logs.follow(container["Id"], Path(labels[LOG_PATH_LABEL]), append=False)
            handle = TaskHandle(executor_id=container["Id"], ip=_ip_of(container))
            tasks.append(RunningTask(handle=handle, labels=labels))
        return tasks

    def _container_ip(self, container_id: str) -> str:
        return _ip_of(self.api.inspect_container(container_id))


# -- pure helpers (tested without an engine) ---------------------------------------------------


def public_environment(launch: TaskLaunch) -> dict[str, str]:
    """The runtime variables plus the allocated GPUs (what SSH sessions see too)."""
    env = dict(launch.env)
    # NVIDIA_VISIBLE_DEVICES names the node's GPUs (what the engine's NVIDIA hook exposes). Inside
    # the container those GPUs are numbered from 0, so CUDA must be told 0..n-1: host index 3
    # would hide the one GPU a task was given.
    env["NVIDIA_VISIBLE_DEVICES"] = ",".join(str(gpu) for gpu in launch.gpus)
    env["CUDA_VISIBLE_DEVICES"] = ",".join(str(number) for number in range(len(launch.gpus)))
    env.setdefault("PAI_WORK_DIR", DEFAULT_WORK_DIR)
    # On the job's network the task's address is its eth0's; on the node's own, the node's.
    env.update(interface_variables(env, None if launch.host_network else JOB_NETWORK_INTERFACE))
    return env


INFINIBAND_DEVICES = "/dev/infiniband"


def device_options(launch: TaskLaunch, *, unlimited_memlock: bool) -> dict[str, Any]:
    """Locked memory unlimited (where the engine may), and the InfiniBand devices a task asked for."""
    options: dict[str, Any] = {}
    if unlimited_memlock:
        options["ulimits"] = [Ulimit(name="memlock", soft=-1, hard=-1)]
    if launch.infiniband:
        options["devices"] = [f"{INFINIBAND_DEVICES}:{INFINIBAND_DEVICES}:rwm"]
        options["cap_add"] = ["IPC_LOCK"]
    return options


def task_environment(launch: TaskLaunch) -> dict[str, str]:
    """The container's environment: the public variables, then the secrets."""
    return {**public_environment(launch), **launch.secret_env}


def etc_environment(env: dict[str, str]) -> str:
    """/etc/environment lines (read by pam_env for SSH sessions). Secrets are never in `env`."""
    lines = []
    for key, value in sorted(env.items()):
        if "\n" in value or '"' in value or not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", key):
            continue  # pam_env cannot express it; the task's own processes still have it
        lines.append(f'{key}="{value}"')
    return "\n".join(lines) + "\n"


RUNTIME_DIR_NAME = "pai-runtime"


def runtime_files(launch: TaskLaunch) -> list[tuple[str, bytes, int]]:
    """/pai/runtime's files: the runtime scripts, the task's command and its environment."""
    files: list[tuple[str, bytes, int]] = [
        (script.name, script.read_bytes(), 0o755) for script in sorted(RUNTIME_DIR.glob("*.sh"))
    ]
    # The command may hold rendered secrets: readable by root only (the container's, the node's),
    # and gone with the container (stop). The entrypoint runs it as a file: no argv holds it.
    files.append((SCRIPT_NAME, launch.command.encode(), 0o700))
    files.append(("environment", etc_environment(public_environment(launch)).encode(), 0o644))
    if launch.ssh_authorized_keys:
        files.append(("authorized_keys", launch.ssh_authorized_keys.encode(), 0o600))
    return files


def write_runtime_dir(launch: TaskLaunch) -> Path:
    """The runtime files in the task's work directory on the node (bind-mounted read-only), a
    folder per attempt: a lost attempt's container, removed once its node answers again, takes its
    own script along, not the next attempt's (on another engine of the same host, or started
    before the removal came). Earlier attempts' folders go (their scripts hold secrets)."""
    directory = Path(launch.work_dir) / f"{RUNTIME_DIR_NAME}-{launch.job_attempt}.{launch.task_attempt}"
    for earlier in Path(launch.work_dir).glob(f"{RUNTIME_DIR_NAME}*"):
        shutil.rmtree(earlier)
    directory.mkdir(parents=True, mode=0o755)
    for name, data, mode in runtime_files(launch):
        path = directory / name
        path.write_bytes(data)
        path.chmod(mode)
    return directory


def runtime_archive(launch: TaskLaunch) -> bytes:
    """The runtime files as a tar for put_archive (engines on other machines)."""
    buffer = io.BytesIO()
    now = time.time()
    with tarfile.open(fileobj=buffer, mode="w") as tar:
        for directory in ("pai", CONTAINER_RUNTIME_DIR):
            info = tarfile.TarInfo(directory)
            info.type, info.mode, info.mtime = tarfile.DIRTYPE, 0o755, now
            tar.addfile(info)
        for name, data, mode in runtime_files(launch):
            info = tarfile.TarInfo(f"{CONTAINER_RUNTIME_DIR}/{name}")
            info.size, info.mode, info.mtime = len(data), mode, now
            tar.addfile(info, io.BytesIO(data))
    return buffer.getvalue()


def exited_status(info: dict[str, Any], *, init_failure: str = "") -> TaskStatus:
    """A TaskStatus from `docker inspect` of an exited container; `init_failure` is docker-init's
    complaint when it could not run the entrypoint (then 126 / 127 are the platform's, not the user's)."""
    state = info["State"]
    exit_code = int(state.get("ExitCode") or 0)
    error = state.get("Error") or init_failure
    memory = (info.get("HostConfig") or {}).get("Memory") or 0
    oom_killed = bool(state.get("OOMKilled")) and exit_code != 0
    status = TaskStatus(
        running=False,
        exit_code=exit_code,
        oom_killed=oom_killed,
        started_at=_parse_time(state.get("StartedAt")),
        finished_at=_parse_time(state.get("FinishedAt")),
    )
    if oom_killed:
        status.diagnostics = Message.of("exit.out_of_memory", mb=memory // (1024 * 1024))
    elif error and exit_code in START_FAILURES:
        status.failure = START_FAILURES[exit_code]
        status.diagnostics = f"the task's container could not start: {error}"
    elif error:
        status.diagnostics = error
    return status


def _parse_time(value: str | None) -> datetime | None:
    """Docker's RFC 3339 times with nanoseconds; the zero time means 'never'."""
    if not value or value.startswith("0001-01-01"):
        return None
    match = re.match(r"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)(\.\d+)?(Z|[+-]\d\d:\d\d)?$", value)
    if not match:
        return None
    fraction = (match.group(2) or ".0")[:7]
    zone = match.group(3) or "Z"
    parsed = datetime.fromisoformat(f"{match.group(1)}{fraction}{'+00:00' if zone == 'Z' else zone}")
    return parsed.astimezone(UTC)


def _ip_of(container: dict[str, Any]) -> str:
    networks: Iterable[dict[str, Any]] = ((container.get("NetworkSettings") or {}).get("Networks") or {}).values()
    for network in networks:
        # An exited container has no IPAddress any more; its fixed address stays in IPAMConfig.
        address = network.get("IPAddress") or (network.get("IPAMConfig") or {}).get("IPv4Address")
        if address:
            return str(address)
    return ""


class _MemlockRefused(Exception):
    """The engine could not give the container unlimited locked memory."""


# runc's words when the engine may not raise RLIMIT_MEMLOCK (resource 8) for the container.
MEMLOCK_REFUSED = "error setting rlimit type 8"
