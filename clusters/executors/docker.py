"""The Docker executor: each task is a container on a per-job network of one Docker engine.

One instance per node (its engine is the node's docker_url; empty = the local socket). It never
touches the database: the scheduler hands it TaskLaunch values and keeps the TaskHandles.

- prepare_job() creates the job's user-defined network with its own /24 subnet, so each task gets
  a fixed address known before any container starts (the runtime environment lists them). A job
  that spans nodes gets no network: its tasks run on the node's own network (TaskLaunch.host_network),
  at the node's address, their job-mates' names in /etc/hosts.
- start() creates the container (limits, shm, published ports, GPUs, mounts, DNS alias and
  hostname `<role>-<index>`), copies the runtime scripts and the task's command into
  /pai/runtime, starts it and streams its log to the task's log file from a background thread.
- Containers carry labels (TaskLaunch.labels + a namespace marker), so list_running() finds them
  again after a scheduler restart, and a start() of a task whose container already exists
  adopts it instead of starting a second one.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import ipaddress
import logging
import os
import re
import shutil
import tarfile
import threading
import time
from collections.abc import Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime
from http import HTTPStatus
from pathlib import Path
from typing import Any

import docker
import requests
from docker.auth import resolve_repository_name
from docker.errors import APIError, DockerException, ImageNotFound, NotFound
from docker.types import DeviceRequest, DriverConfig, LogConfig, Ulimit
from docker.types import Mount as DockerMount
from docker.utils import parse_repository_tag

import clusters.userfs as userfs
from clusters.executors import staging, texts
from clusters.executors.app_ports import portals_own_engine
from clusters.executors.base import (
    Executor,
    ExecutorError,
    Failure,
    Mount,
    NfsVolume,
    ResourceSample,
    RunningTask,
    TaskHandle,
    TaskLaunch,
    TaskStatus,
)
from clusters.executors.docker_logs import log_frames
from clusters.executors.interfaces import interface_variables
from clusters.executors.limits import DEFAULT_PIDS_LIMIT
from clusters.executors.logcap import DEFAULT_LOG_MAX_BYTES, TaskLogs, make_private_dirs
from clusters.executors.plain_errors import engine_lost, engine_silent
from clusters.executors.stats import from_docker_stats

log = logging.getLogger("pai.executors.docker")

RUNTIME_DIR = Path(__file__).resolve().parent / "runtime"
JOB_NETWORK_INTERFACE = "eth0"  # a container's interface on its (one) job network
CONTAINER_RUNTIME_DIR = "pai/runtime"  # relative to / inside the container (tar member names)
ENTRYPOINT = ["/bin/sh", f"/{CONTAINER_RUNTIME_DIR}/entrypoint.sh"]
DEFAULT_WORK_DIR = "/pai/work"

MARKER_LABEL = "pai.portal"  # value: the executor's namespace
LOG_PATH_LABEL = "pai.log-path"
STAGING_LABEL = "pai.staged-mounts"  # the container's staging folder (clusters.executors.staging)
KEPT_SUFFIX = "-debug"  # the name of a container stop(keep=True) left for inspection
# Several portals (or test runs) may share one engine: names and the marker carry a namespace
# (settings.PAI_DOCKER_NAMESPACE, handed in by the registry).
DEFAULT_NAMESPACE = "pai"
# Per-job networks are /24 subnets carved out of this pool (settings.PAI_DOCKER_SUBNET_POOL).
DEFAULT_SUBNET_POOL = "10.213.0.0/16"
MAX_TASKS_PER_NETWORK = 253  # a /24 minus network, gateway and broadcast

# Exit codes of a container that could not start (docker run's convention).
START_FAILURES = {
    125: Failure.CREATE_FAILED,
    126: Failure.START_PERMISSION_DENIED,
    127: Failure.START_COMMAND_NOT_FOUND,
}
# How the engine words a mount it could not make: a volume (NFS) at start, a bind source at create.
MOUNT_FAILURE_SIGNS = ("failed to mount local volume", "bind source path does not exist", "error while mounting volume")
LOG_FLUSH_WAIT_S = 3.0
SAMPLE_THREADS = 8  # engine stats calls side by side (each waits on the engine, not on us)
ENGINE_LOG_MIN_BYTES = 16 * 1024 * 1024
PING_TIMEOUT_S = 5


class DockerExecutor(Executor):
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
        self.log_max_bytes = log_max_bytes  # the task's log file and the engine's own copy of it
        self.pids_limit = pids_limit
        # memlock unlimited (RDMA pins its buffers); off where the engine may not raise it (rootless).
        self.unlimited_memlock = unlimited_memlock
        self.address = address  # the node's address: published ports bind here
        self.namespace = namespace or DEFAULT_NAMESPACE
        self.subnet_pool = ipaddress.IPv4Network(subnet_pool or DEFAULT_SUBNET_POOL)
        self.timeout = timeout
        self._api: docker.APIClient | None = None
        self._lock = threading.Lock()
        self._log_threads: dict[str, threading.Thread] = {}
        self._logs_complete: set[str] = set()  # exited containers whose log file is whole
        self._cpu_count: int | None = None
        # Where a local engine's bind sources below a user-writable folder are staged, by namespace.
        self.mounts_dir = Path(mounts_dir or staging.DEFAULT_MOUNTS_DIR)
        self._staging_problem: str | None = None
        self._staging_lock = threading.Lock()
        self._staging_now: set[Path] = set()  # staged for a container not created yet

    @property
    def engine_log_options(self) -> dict[str, str]:
        """The engine's own copy of the output (json-file) is bounded too. Rotating it faster than
        the log thread reads breaks the stream ("Error grabbing logs"), so never below 16 MiB."""
        return {"max-size": str(max(self.log_max_bytes, ENGINE_LOG_MIN_BYTES)), "max-file": "2"}

    # -- engine ------------------------------------------------------------------------------

    @property
    def api(self) -> docker.APIClient:
        """The low-level client, made on first use (an engine that is down must not break import)."""
        if self._api is None:
            kwargs: dict[str, Any] = {"timeout": self.timeout}
            if self.docker_url:
                kwargs["base_url"] = self.docker_url
            self._api = docker.APIClient(**kwargs)
        return self._api

    def ping(self) -> None:
        """A short-timeout ping on a client of its own, so a hung engine cannot hold the loop."""
        kwargs: dict[str, Any] = {"timeout": PING_TIMEOUT_S}
        if self.docker_url:
            kwargs["base_url"] = self.docker_url
        try:
            client = docker.APIClient(**kwargs)
            try:
                client.ping()
            finally:
                client.close()
        except (APIError, requests.exceptions.RequestException, DockerException) as exc:
            log.info("ping of the Docker engine %s failed: %r", self.docker_url or "local socket", exc)
            raise ExecutorError(engine_silent(self.docker_url, exc, PING_TIMEOUT_S), Failure.NODE_LOST) from exc

    def _new_api(self) -> docker.APIClient:
        """A client of its own for a log thread (one connection per stream)."""
        kwargs: dict[str, Any] = {"timeout": None, "version": self.api.api_version}
        if self.docker_url:
            kwargs["base_url"] = self.docker_url
        return docker.APIClient(**kwargs)

    def _engine_cpus(self) -> int:
        if self._cpu_count is None:
            self._cpu_count = int(self.api.info().get("NCPU") or 1)
        return self._cpu_count

    # -- names -------------------------------------------------------------------------------

    def network_name(self, job_id: int) -> str:
        return f"{self.namespace}-job-{job_id}"

    def container_name(self, launch: TaskLaunch) -> str:
        raw = (
            f"{self.namespace}-{launch.job_id}-{launch.role}-{launch.index}-{launch.job_attempt}-{launch.task_attempt}"
        )
        return re.sub(r"[^A-Za-z0-9_.-]", "_", raw)

    # -- job network -------------------------------------------------------------------------

    def prepare_job(
        self,
        job_id: int,
        job_name: str,
        tasks: list[tuple[str, int]],
        node_address: str,
        *,
        host_network: bool = False,
    ) -> dict[tuple[str, int], str]:
        if host_network:  # no job network: every task is at the node's address
            return super().prepare_job(job_id, job_name, tasks, node_address, host_network=True)
        if len(tasks) > MAX_TASKS_PER_NETWORK:
            raise ExecutorError(f"{len(tasks)} tasks on one node: a job network holds at most {MAX_TASKS_PER_NETWORK}")
        try:
            subnet = self._ensure_network(job_id, job_name)
        except (APIError, requests.exceptions.RequestException, DockerException) as exc:
            raise ExecutorError(f"could not create the job's network: {_explain(exc)}", _failure_of(exc)) from exc
        # .1 is the gateway; tasks get .2, .3, ... in (role, index) order: the same on every
        # call, so a job retry finds its tasks at the addresses it had.
        hosts = iter(subnet.hosts())
        next(hosts)
        return {task: str(next(hosts)) for task in sorted(tasks)}

    def _ensure_network(
        self, job_id: int, job_name: str, preferred: ipaddress.IPv4Network | None = None
    ) -> ipaddress.IPv4Network:
        """The job's network, made unless it is there (`preferred`: the subnet to try first, the
        one its tasks' addresses were given in)."""
        name = self.network_name(job_id)
        existing = self._network(name)
        if existing is not None:
            return _network_subnet(existing)
        taken = [_network_subnet(n) for n in self.api.networks() if _has_subnet(n)]
        labels = {MARKER_LABEL: self.namespace, "pai.job-id": str(job_id), "pai.job": job_name}
        candidates: list[ipaddress.IPv4Network] = list(self.subnet_pool.subnets(new_prefix=24))
        start = job_id % len(candidates)  # spread jobs over the pool: fewer collisions between portals
        ordered = candidates[start:] + candidates[:start]
        if preferred is not None and preferred in ordered:
            ordered.remove(preferred)
            ordered.insert(0, preferred)
        for subnet in ordered:
            if any(subnet.overlaps(other) for other in taken):
                continue
            gateway = str(next(iter(subnet.hosts())))
            ipam = docker.types.IPAMConfig(pool_configs=[docker.types.IPAMPool(subnet=str(subnet), gateway=gateway)])
            try:
                self.api.create_network(name, driver="bridge", ipam=ipam, labels=labels, check_duplicate=True)
            except APIError as exc:
                existing = self._network(name)
                if existing is not None:  # a concurrent create (one past its deadline, still running) made it
                    return _network_subnet(existing)
                if "overlap" in str(exc).lower():  # another job took this subnet just now
                    continue
                raise
            # check_duplicate is best effort: two creates side by side can both succeed, on two
            # subnets, and the engine then refuses "network ... is ambiguous" at every start.
            return _network_subnet(self._network(name) or {}) if self._duplicated(name) else subnet
        raise ExecutorError(f"no free /24 subnet left in {self.subnet_pool} for the job's network")

    def _network(self, name: str) -> dict[str, Any] | None:
        """The network of that exact name; of several (see _duplicated), the one kept."""
        named = self._named(name)
        if not named:
            return None
        return dict(self.api.inspect_network(_kept(named)["Id"]))

    def _named(self, name: str) -> list[dict[str, Any]]:
        """The networks of exactly that name (the engine's filter also matches names containing it)."""
        return [network for network in self.api.networks(names=[name]) if network.get("Name") == name]

    def _duplicated(self, name: str) -> bool:
        """Whether several networks bear the job network's name; if so, all but the kept one that
        no container uses are removed (every caller keeps the same one, see _kept)."""
        named = self._named(name)
        if len(named) < 2:
            return False
        kept = _kept(named)
        for network in named:
            if network["Id"] != kept["Id"] and not self.api.inspect_network(network["Id"]).get("Containers"):
                try:
                    self.api.remove_network(network["Id"])
                except APIError as exc:
                    log.warning("removing a duplicate of network %s: %s", name, _explain(exc))
        return True

    def cleanup_job(self, job_id: int, *, keep: bool = False) -> None:
        try:
            containers = self.api.containers(all=True, filters={"label": [self._marker(), f"pai.job-id={job_id}"]})
            if not keep:
                for container in containers:
                    self._remove(container["Id"])
            if keep and containers:
                return  # the kept containers stay attached to their network
            for network in self._named(self.network_name(job_id)):  # (duplicates too: see _duplicated)
                with contextlib.suppress(NotFound):  # (gone meanwhile: a late call of an earlier try)
                    self.api.remove_network(network["Id"])
        except (APIError, requests.exceptions.RequestException, DockerException) as exc:
            engine = self.docker_url or "the local engine"
            raise ExecutorError(f"cleaning up job {job_id} on {engine}: {_explain(exc)}", _failure_of(exc)) from exc

    def leftover_jobs(self) -> set[int]:
        """The jobs whose networks this engine holds (by their labels)."""
        networks = self.api.networks(filters={"label": [self._marker()]})
        ids = {str((network.get("Labels") or {}).get("pai.job-id", "")) for network in networks}
        return {int(job_id) for job_id in ids if job_id.isdigit()}

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
        except _NetworkGone as gone:
            log.warning("%s; making it again (or one of it) for %s", gone, launch.hostname)
            try:
                self._duplicated(self.network_name(launch.job_id))
                self._ensure_network(launch.job_id, launch.job_name, _subnet_of(launch.ip))
            except (APIError, requests.exceptions.RequestException, DockerException) as exc:
                raise ExecutorError(f"could not create the job's network: {_explain(exc)}", _failure_of(exc)) from exc
        try:
            return self._start(launch)
        except _NetworkGone as gone:
            raise ExecutorError(f"could not create the task's container: {gone}", Failure.CREATE_FAILED) from gone

    def _network_gone(self, launch: TaskLaunch, exc: BaseException) -> bool:
        """Whether the engine refused the container because the job's network is not there."""
        if launch.host_network or not isinstance(exc, APIError):
            return False
        said = _explain(exc).lower()
        if "network" in said and "is ambiguous" in said:  # two of its name (see _duplicated)
            return True
        return "network" in said and ("not found" in said or "no such network" in said)

    def _start(self, launch: TaskLaunch) -> TaskHandle:
        name = self.container_name(launch)
        # A local engine bind-mounts the task's runtime files from the node; a remote one gets
        # them copied into the container before it starts.
        runtime_dir = write_runtime_dir(launch) if self.local_engine else None
        mounts, staged = self._staged_mounts(launch.mounts, name)
        asked_memlock = self.unlimited_memlock
        try:
            created = self._create_or_adopt(name, launch, runtime_dir, mounts, staged)
        except ExecutorError:
            self._release(staged)
            raise
        except (APIError, requests.exceptions.RequestException, DockerException) as exc:
            self._release(staged)
            if self._network_gone(launch, exc):
                raise _NetworkGone(_explain(exc)) from exc
            storage_failure = self._storage_failure(launch, _explain(exc))
            if storage_failure is not None:
                raise storage_failure from exc
            if INVALID_REFERENCE in _explain(exc):  # the engine's own words, about the name alone
                raise ExecutorError(
                    f"image {launch.image!r} is not a valid image reference ({_explain(exc)}): correct the image "
                    "in the job's config",
                    Failure.IMAGE_NOT_FOUND,
                ) from exc
            raise ExecutorError(f"could not create the task's container: {_explain(exc)}", _failure_of(exc)) from exc
        finally:
            with self._staging_lock:
                self._staging_now.discard(staged or Path())
        if isinstance(created, TaskHandle):
            self._release(staged)  # this task's container was there already, with mounts of its own
            return created
        try:
            if runtime_dir is None:
                self.api.put_archive(created, "/", runtime_archive(launch))
            self.api.start(created)
        except (APIError, requests.exceptions.RequestException) as exc:
            if self._network_gone(launch, exc):
                self._remove(created)  # (made for a network that is no more)
                raise _NetworkGone(_explain(exc)) from exc
            if asked_memlock and MEMLOCK_REFUSED in _explain(exc):  # (tasks started side by side: each)
                self._remove(created)
                self.unlimited_memlock = False
                raise _MemlockRefused(_explain(exc)) from exc
            raise self._start_failure(created, launch, exc) from exc
        self._follow_logs(created, launch.log_path, append=True)
        return TaskHandle(executor_id=created, ip=launch.ip or self._container_ip(created))

    @property
    def local_engine(self) -> bool:
        return not self.docker_url or self.docker_url.startswith(("unix://", "/"))

    # -- mounts below a folder a task can write ----------------------------------------------

    @property
    def staging_problem(self) -> str:
        """Why this node cannot stage mounts from a descriptor ('' when it can; asked once)."""
        if self._staging_problem is None:
            socket_path = (self.docker_url or "unix:///var/run/docker.sock").removeprefix("unix://")
            self._staging_problem = staging.engine_problem(socket_path)
        return self._staging_problem

    def _staged_mounts(self, mounts: list[Mount], name: str) -> tuple[list[Mount], Path | None]:
        """The mounts the engine gets: where a source lies below a folder a user's task can write
        (Mount.beneath), a staging folder holding what a no-follow walk opened (a local engine; a
        remote one resolves the paths on its own machine); and the task's staging folder, if any."""
        if not self.local_engine or not any(mount.beneath for mount in mounts):
            return mounts, None
        folder: Path | None = None
        result = []
        try:
            for index, mount in enumerate(mounts):
                names = self._components(mount)
                if len(names) <= 1:  # the area itself: only the portal names things in its parent
                    with self._refusal(mount):
                        staging.check_named(mount, names)
                    result.append(mount)
                    continue
                if self.staging_problem:
                    raise ExecutorError(
                        f"{mount.host_path} cannot be mounted safely at {mount.container_path} on node "
                        f"{self.address} ({self.staging_problem}): a folder inside a storage area needs a "
                        "portal that mounts it itself",
                        Failure.STORAGE_MOUNT_FAILED,
                        storage=mount.storage,
                    )
                if folder is None:
                    with self._staging_lock:
                        folder = staging.new_folder(self.mounts_dir / self.namespace, name)
                        self._staging_now.add(folder)
                with self._refusal(mount):
                    result.append(staging.stage(mount, names, folder / str(index)))
        except BaseException:
            self._release(folder)
            with self._staging_lock:
                self._staging_now.discard(folder or Path())
            raise
        return result, folder

    @staticmethod
    def _components(mount: Mount) -> list[str]:
        if not mount.beneath or mount.nfs is not None:
            return []
        try:
            return staging.components_below(mount)
        except userfs.UserFsError as exc:
            raise ExecutorError(f"cannot mount {mount.container_path}: {exc}", Failure.STORAGE_MOUNT_FAILED) from exc

    @contextlib.contextmanager
    def _refusal(self, mount: Mount) -> Iterator[None]:
        """A link (or a file, or nothing) where a folder to mount was: a failed start naming it."""
        try:
            yield
        except (userfs.UserFsError, OSError) as exc:
            raise ExecutorError(
                f"cannot mount {mount.host_path} at {mount.container_path}: {exc}",
                Failure.STORAGE_MOUNT_FAILED,
                storage=mount.storage,
            ) from exc

    def _release(self, folder: Path | None) -> None:
        """Detach a task's staged mounts (a folder of this executor's staging root only)."""
        if folder is None or Path(os.path.normpath(folder)).parent != self.mounts_dir / self.namespace:
            return
        try:
            staging.release(folder)
        except OSError as exc:
            log.warning("could not release the staged mounts in %s: %s", folder, exc)

    def _staging_leftovers(self) -> set[Path]:
        """The staging folders now, less those of starts under way. Taken before the containers are
        listed: a folder of a start that ends meanwhile has its container in the listing."""
        with self._staging_lock:
            root = self.mounts_dir / self.namespace
            folders = set(root.iterdir()) if root.is_dir() else set()
            return folders - self._staging_now

    def _release_leftovers(self, folders: set[Path], containers: list[dict[str, Any]]) -> None:
        """Staging folders of containers gone (removed outside the portal, or a crash between
        staging and creating)."""
        used = {Path(label) for c in containers if (label := (c.get("Labels") or {}).get(STAGING_LABEL))}
        for folder in folders - used:
            self._release(folder)

    def _create_or_adopt(
        self, name: str, launch: TaskLaunch, runtime_dir: Path | None, mounts: list[Mount], staged: Path | None
    ) -> str | TaskHandle:
        """The new container's id; or the handle of this very task's container when it exists
        already (a scheduler restart between start and recording): never a second one."""
        for _ in range(3):
            try:
                return self._create(name, launch, runtime_dir, mounts, staged)
            except ImageNotFound:
                self._pull(launch.image, launch.registry_auth)
            except APIError as exc:
                if exc.status_code != 409:  # 409: the name is taken
                    raise
                adopted = self._adopt(name, launch)
                if adopted is not None:
                    return adopted
        raise ExecutorError(f"could not create the container {name}")

    def _adopt(self, name: str, launch: TaskLaunch) -> TaskHandle | None:
        try:
            info = self.api.inspect_container(name)
        except NotFound:
            return None
        if info["State"]["Status"] == "created":  # never started: its runtime files may be missing
            self._remove(info["Id"])
            return None
        log.info("adopting existing container %s for %s", name, launch.hostname)
        if info["State"]["Running"]:
            self._follow_logs(info["Id"], launch.log_path, append=False)
        else:
            self._write_full_log(info["Id"], launch.log_path)
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
            **self._network_options(launch, ports),
            init=True,  # docker-init as PID 1: forwards signals, reaps sshd's children
            nano_cpus=int(min(launch.cpu, self._engine_cpus()) * 1_000_000_000),
            mem_limit=f"{launch.memory_mb}m",
            memswap_limit=f"{launch.memory_mb}m",
            shm_size=f"{launch.shm_mb}m",
            pids_limit=self.pids_limit,
            log_config=LogConfig(type=LogConfig.types.JSON, config=self.engine_log_options),
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
            networking_config=self._networking_config(launch),
        )
        return str(created["Id"])

    def _network_options(self, launch: TaskLaunch, ports: list[int]) -> dict[str, Any]:
        """The job's own network, its ports published on the node's address (an app's, on the
        portal's own engine, nowhere); or, for a job that
        spans nodes, the node's network itself, where the task binds its ports directly. Either way
        its job-mates' names are in /etc/hosts from its first line (the job network's DNS knows a
        container only once it runs)."""
        if launch.host_network:
            # On the node's network NET_RAW would let a task sniff or forge other jobs' traffic.
            return {"network_mode": "host", "extra_hosts": launch.extra_hosts, "cap_drop": ["NET_RAW"]}
        # An app's port stays on the job's network, where the portal's machine reaches it (app_ports.py).
        unpublished = set(launch.app_ports) if portals_own_engine(self.docker_url) else set()
        return {
            "network_mode": self.network_name(launch.job_id),
            "port_bindings": {port: (self.address, port) for port in ports if port not in unpublished},
            # (Docker writes the task's own name: a second line would make `hostname -i` say it twice)
            "extra_hosts": {name: ip for name, ip in launch.extra_hosts.items() if name != launch.hostname},
        }

    def _networking_config(self, launch: TaskLaunch) -> dict[str, Any] | None:
        """The task's fixed address and DNS alias `<role>-<index>` on its job network."""
        if launch.host_network:
            return None
        endpoint = self.api.create_endpoint_config(aliases=[launch.hostname], ipv4_address=launch.ip or None)
        return dict(self.api.create_networking_config({self.network_name(launch.job_id): endpoint}))

    def _pull(self, image: str, auth: dict[str, str] | None) -> None:
        """Pull an image the engine lacks; a failure is exit 254 with a clear reason."""
        repository, tag = parse_repository_tag(image)
        auth_config = None
        if auth:
            auth_config = {"username": auth.get("username", ""), "password": auth.get("password", "")}
            if auth.get("registry"):
                auth_config["serveraddress"] = auth["registry"]
        try:
            self.api.pull(repository, tag=tag or "latest", auth_config=auth_config)
            self.api.inspect_image(image)
        except (APIError, requests.exceptions.RequestException) as exc:
            log.warning("pulling %s failed: %s", image, _explain(exc))  # the engine's words, for the admin
            raise ExecutorError(
                pull_failure_message(image, _explain(exc), auth is not None), Failure.IMAGE_NOT_FOUND
            ) from exc

    def _storage_failure(self, launch: TaskLaunch, reason: str) -> ExecutorError | None:
        """The engine could not mount one of the task's storages: which one, and why, in words."""
        if not any(sign in reason for sign in MOUNT_FAILURE_SIGNS):
            return None
        for mount in launch.mounts:
            named = (
                mount.host_path if mount.nfs is None else nfs_volume_name(mount.nfs, mount.read_only, self.namespace)
            )
            if named and named in reason:
                what = f"storage {mount.storage}" if mount.storage else f"{mount.host_path} (the portal's file store)"
                message = f"{what} could not be mounted at {mount.container_path} on node {self.address}: {reason}"
                return ExecutorError(message, Failure.STORAGE_MOUNT_FAILED, storage=mount.storage)
        return ExecutorError(
            f"a storage could not be mounted on node {self.address}: {reason}", Failure.STORAGE_MOUNT_FAILED
        )

    def _start_failure(self, container_id: str, launch: TaskLaunch, exc: Exception) -> ExecutorError:
        reason = _explain(exc)
        failure = Failure.CREATE_FAILED
        lowered = reason.lower()
        storage_failure = self._storage_failure(launch, reason)
        if storage_failure is not None:
            if not launch.keep_on_failure:
                self._remove(container_id)
            return storage_failure
        if "port is already allocated" in lowered or ("bind" in lowered and "address already in use" in lowered):
            failure = Failure.PORT_CONFLICT
        else:
            try:
                exit_code = self.api.inspect_container(container_id)["State"]["ExitCode"]
                failure = START_FAILURES.get(exit_code, Failure.CREATE_FAILED)
            except (APIError, requests.exceptions.RequestException):
                pass
        if not launch.keep_on_failure:
            self._remove(container_id)
        return ExecutorError(f"the task's container could not start: {reason}", failure)

    def poll(self, handle: TaskHandle) -> TaskStatus:
        try:
            info = self.api.inspect_container(handle.executor_id)
        except NotFound:
            return TaskStatus(
                running=False,
                lost=True,
                failure=Failure.TASK_GONE,
                diagnostics=texts.CONTAINER_GONE(id=handle.executor_id[:12]),
            )
        except (APIError, requests.exceptions.RequestException, DockerException) as exc:
            return TaskStatus(
                running=False,
                lost=True,
                failure=Failure.NODE_LOST,
                diagnostics=engine_lost(self.docker_url, exc, self.timeout),
            )
        state = info["State"]
        started_at = _parse_time(state.get("StartedAt"))
        if state["Running"] or state["Status"] in {"restarting", "paused"}:
            log_path = info["Config"]["Labels"].get(LOG_PATH_LABEL)
            if log_path and handle.executor_id not in self._log_threads:  # after a scheduler restart
                self._follow_logs(info["Id"], Path(log_path), append=False)
            return TaskStatus(running=True, started_at=started_at)
        if state["Status"] == "created":
            return TaskStatus(
                running=False,
                lost=True,
                failure=Failure.TASK_GONE,
                diagnostics=texts.NEVER_STARTED(),
            )
        if handle.executor_id in self._log_threads:
            self._finish_log(handle.executor_id)
        elif handle.executor_id not in self._logs_complete:
            # It exited while no scheduler was streaming its log (a restart): copy it whole.
            log_path = info["Config"]["Labels"].get(LOG_PATH_LABEL)
            if log_path:
                with contextlib.suppress(APIError, requests.exceptions.RequestException, OSError):
                    self._write_full_log(handle.executor_id, Path(log_path))
        self._logs_complete.add(handle.executor_id)
        init_failure = ""
        if state.get("ExitCode") in START_FAILURES and not state.get("Error"):
            # docker-init could not exec the entrypoint (no /bin/sh in the image): it says so last.
            with contextlib.suppress(APIError, requests.exceptions.RequestException):
                tail = self.api.logs(handle.executor_id, stdout=True, stderr=True, tail=3).decode(errors="replace")
                init_failure = next((line for line in tail.splitlines() if line.startswith("[FATAL tini")), "")
        return exited_status(info, init_failure=init_failure)

    def sample(self, handles: list[TaskHandle]) -> dict[str, ResourceSample]:
        if not handles:
            return {}
        with ThreadPoolExecutor(max_workers=min(SAMPLE_THREADS, len(handles))) as pool:
            readings = pool.map(self._sample_one, [handle.executor_id for handle in handles])
        return {handle.executor_id: reading for handle, reading in zip(handles, readings, strict=True) if reading}

    def _sample_one(self, container_id: str) -> ResourceSample | None:
        try:  # one-shot: the engine answers at once instead of waiting a second for a CPU delta
            stats = self.api.stats(container_id, stream=False, one_shot=True)
        except (APIError, requests.exceptions.RequestException, DockerException):
            return None
        return from_docker_stats(stats)

    def terminate(self, handle: TaskHandle, grace_s: int) -> None:
        """SIGTERM to the container's main process (the task's bash: a trap there sees it); the
        scheduler removes the container at the deadline (stop()). Signalled once per executor."""
        if handle.executor_id in self._terminated:
            return
        with contextlib.suppress(APIError, requests.exceptions.RequestException):
            self.api.kill(handle.executor_id, signal="SIGTERM")
        self._terminated.add(handle.executor_id)

    def stop(self, handle: TaskHandle, *, keep: bool = False) -> None:
        self._terminated.discard(handle.executor_id)
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
            self._finish_log(handle.executor_id)
            return
        self._remove_script(handle.executor_id)
        self._remove(handle.executor_id)

    def _remove_script(self, container_id: str) -> None:
        """command.sh holds the job's secrets: on a local engine it leaves the node with its
        container (a remote engine's copy is in the container's own layer, removed with it)."""
        if not self.local_engine:
            return
        try:
            mounts = self.api.inspect_container(container_id).get("Mounts") or []
        except (APIError, requests.exceptions.RequestException, DockerException):
            return  # gone already
        for mount in mounts:
            if mount.get("Destination") == f"/{CONTAINER_RUNTIME_DIR}" and mount.get("Source"):
                (Path(mount["Source"]) / SCRIPT_NAME).unlink(missing_ok=True)

    def _remove(self, container_id: str) -> None:
        staged = None
        if self.local_engine:
            with contextlib.suppress(NotFound):
                staged = (self.api.inspect_container(container_id)["Config"].get("Labels") or {}).get(STAGING_LABEL)
        try:
            self.api.remove_container(container_id, force=True)
        except NotFound:
            pass
        except APIError as exc:
            if "already in progress" not in str(exc):
                raise
        if staged:
            self._release(Path(staged))
        self._finish_log(container_id, wait=0.5)
        self._logs_complete.discard(container_id)

    def list_running(self) -> list[RunningTask]:
        tasks = []
        leftovers = self._staging_leftovers() if self.local_engine else set()
        containers = self.api.containers(all=True, filters={"label": self._marker()})
        self._release_leftovers(leftovers, containers)
        for container in containers:
            if any(name.endswith(KEPT_SUFFIX) for name in container.get("Names") or []):
                continue  # kept for debugging (isDebug): not a task any more
            labels = dict(container.get("Labels") or {})
            handle = TaskHandle(executor_id=container["Id"], ip=_ip_of(container))
            tasks.append(RunningTask(handle=handle, labels=labels))
        return tasks

    def _marker(self) -> str:
        return f"{MARKER_LABEL}={self.namespace}"

    def _container_ip(self, container_id: str) -> str:
        return _ip_of(self.api.inspect_container(container_id))

    # -- logs --------------------------------------------------------------------------------

    def _follow_logs(self, container_id: str, log_path: Path, *, append: bool) -> None:
        """Copy the container's output into the task's log files while it runs."""
        log_path = Path(log_path)
        make_private_dirs(log_path.parent)
        thread = threading.Thread(
            target=self._copy_logs,
            args=(container_id, log_path, "ab" if append else "wb"),
            name=f"pai-log-{container_id[:12]}",
            daemon=True,
        )
        with self._lock:
            if container_id in self._log_threads:
                return
            self._log_threads[container_id] = thread
        thread.start()

    def _copy_logs(self, container_id: str, log_path: Path, mode: str) -> None:
        try:
            api = self._new_api()
            with TaskLogs(log_path, self.log_max_bytes, truncate=mode == "wb") as logs:
                for stream, chunk in log_frames(api, container_id, follow=True):
                    logs.write(stream, chunk)
            api.close()
        except (APIError, requests.exceptions.RequestException, OSError, DockerException) as exc:
            log.debug("log stream of %s ended: %s", container_id[:12], exc)

    def _write_full_log(self, container_id: str, log_path: Path) -> None:
        with TaskLogs(log_path, self.log_max_bytes, truncate=True) as logs:
            for stream, chunk in log_frames(self.api, container_id, follow=False):
                logs.write(stream, chunk)

    def _finish_log(self, container_id: str, wait: float = LOG_FLUSH_WAIT_S) -> None:
        """Let the log thread write the last lines before the exit is reported."""
        with self._lock:
            thread = self._log_threads.pop(container_id, None)
        if thread is not None:
            thread.join(timeout=wait)


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
SCRIPT_NAME = "command.sh"


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
    """The runtime files in the task's work directory on the node (bind-mounted read-only)."""
    directory = Path(launch.work_dir) / RUNTIME_DIR_NAME
    if directory.exists():
        shutil.rmtree(directory)
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
        status.diagnostics = texts.OUT_OF_MEMORY(mb=memory // (1024 * 1024))
    elif error and exit_code in START_FAILURES:
        status.failure = START_FAILURES[exit_code]
        status.diagnostics = f"the task's container could not start: {error}"
    elif error:
        status.diagnostics = error
    return status


# The engine refuses a malformed image name with this (a job submitted before the portal checked
# references): the user's to fix, so exit 254 (never retried), not an unknown create failure.
INVALID_REFERENCE = "invalid reference format"
AUTH_SIGNS = ("unauthorized", "authentication required", "no basic auth", "denied")
UNREACHABLE_SIGNS = ("no such host", "connection refused", "dial tcp", "timeout", "i/o timeout", "no route to host")
NOT_FOUND_SIGNS = ("manifest unknown", "not found")


def pull_failure_message(image: str, reason: str, with_credentials: bool) -> str:
    """What failed, in the portal's words: the engine's own text may quote the page the registry
    answered, and an image may name any HTTP service as its registry (a probe of the node's
    loopback): that text is for the node's log, never for the user."""
    registry = resolve_repository_name(parse_repository_tag(image)[0])[0]
    where = f"pulling image {image} from registry {registry} failed"
    said = reason.split("response body", 1)[0].lower()  # the engine's words, before the remote page
    status = re.search(r"\bhttp (\d{3})\b", said)
    if any(sign in said for sign in AUTH_SIGNS):
        if with_credentials:
            return f"{where}: the registry refused the credentials"
        return f"{where}: image not found, or the registry needs credentials (authFile)"
    if any(sign in said for sign in UNREACHABLE_SIGNS):
        return f"{where}: the image is not on the node and the registry cannot be reached"
    if status is not None:
        return f"{where}: the registry answered HTTP {_status_words(int(status.group(1)))}"
    if any(sign in said for sign in NOT_FOUND_SIGNS):
        return f"{where}: image not found in the registry"
    return f"{where}: the engine could not pull it"


def _status_words(code: int) -> str:
    try:
        return f"{code} {HTTPStatus(code).phrase}"
    except ValueError:
        return str(code)


def _explain(exc: BaseException) -> str:
    if isinstance(exc, APIError) and exc.explanation:
        return str(exc.explanation)
    return str(exc)


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


def _has_subnet(network: dict[str, Any]) -> bool:
    configs = (network.get("IPAM") or {}).get("Config") or []
    return any(c.get("Subnet") and ":" not in c["Subnet"] for c in configs)


def nfs_volume_options(nfs: NfsVolume, read_only: bool) -> dict[str, str]:
    """Docker's `local` driver mounts the export itself when a container using it starts (the node
    needs an NFS client: kernel support, as for `mount -t nfs`)."""
    options = [
        f"addr={nfs.server}",
        "ro" if read_only else "rw",
        *(o.strip() for o in nfs.options.split(",") if o.strip()),
    ]
    return {"type": "nfs", "o": ",".join(options), "device": f":{nfs.export}"}


def nfs_volume_name(nfs: NfsVolume, read_only: bool, namespace: str) -> str:
    """One named volume per export, subfolder and options: tasks that mount the same share it, and a
    changed storage config makes a new one instead of reusing stale options."""
    options = nfs_volume_options(nfs, read_only)
    digest = hashlib.sha256("\n".join(f"{k}={options[k]}" for k in sorted(options)).encode()).hexdigest()[:20]
    return f"{namespace}-nfs-{digest}"


def docker_mount(mount: Mount, namespace: str) -> DockerMount:
    if mount.nfs is None:
        return DockerMount(target=mount.container_path, source=mount.host_path, type="bind", read_only=mount.read_only)
    return DockerMount(
        target=mount.container_path,
        source=nfs_volume_name(mount.nfs, mount.read_only, namespace),
        type="volume",
        read_only=mount.read_only,
        driver_config=DriverConfig("local", options=nfs_volume_options(mount.nfs, mount.read_only)),
    )


def _kept(networks: list[dict[str, Any]]) -> dict[str, Any]:
    """Of several networks of one name, the one every caller keeps: the first created (it got the
    subnet the job's addresses were given in; a later duplicate had to take another)."""
    return min(networks, key=lambda network: (network.get("Created", ""), network["Id"]))


def _network_subnet(network: dict[str, Any]) -> ipaddress.IPv4Network:
    for config in (network.get("IPAM") or {}).get("Config") or []:
        subnet = config.get("Subnet") or ""
        if subnet and ":" not in subnet:
            return ipaddress.IPv4Network(subnet)
    raise ExecutorError(f"network {network.get('Name')} has no IPv4 subnet")


class _MemlockRefused(Exception):
    """The engine could not give the container unlimited locked memory."""


# runc's words when the engine may not raise RLIMIT_MEMLOCK (resource 8) for the container.
MEMLOCK_REFUSED = "error setting rlimit type 8"


class _NetworkGone(Exception):
    """The engine refused a task's container: its job network is not there (any more)."""


def _subnet_of(ip: str) -> ipaddress.IPv4Network | None:
    """The /24 a task's address was given in (job networks are /24s), or None without one."""
    try:
        return ipaddress.IPv4Network(f"{ip}/24", strict=False) if ip else None
    except ValueError:
        return None


def _failure_of(exc: Exception) -> Failure:
    """An engine that cannot be reached is a lost node; anything it answered is a create failure."""
    unreachable = isinstance(exc, requests.exceptions.ConnectionError) or (
        isinstance(exc, DockerException) and "Error while fetching server API version" in str(exc)
    )
    return Failure.NODE_LOST if unreachable else Failure.CREATE_FAILED
