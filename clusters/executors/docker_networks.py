"""A Docker job's own network on a node's engine, and how a task joins it (or the node's network).

Each job that runs on one node gets a user-defined bridge network with its own /24, carved out of
the subnet pool, so every task's address is known before any container starts (the runtime
environment lists them); a job that spans nodes gets none: its tasks are on the node's own network
(TaskLaunch.host_network), at the node's address. Either way a task's job-mates' names are in its
/etc/hosts. Networks carry the namespace's marker and the job's id, so a restarted scheduler finds
the leftovers of jobs that ended.
"""

from __future__ import annotations

import contextlib
import ipaddress
import logging
from typing import Any

import docker
from docker.errors import APIError, NotFound

from catalogue import Message
from clusters.executors.app_ports import portals_own_engine
from clusters.executors.base import ExecutorError, TaskLaunch
from clusters.executors.docker_engine import ENGINE_ERRORS, MARKER_LABEL, Engine, explain, failure_of, marker

log = logging.getLogger("pai.executors.docker")

# Per-job networks are /24 subnets carved out of this pool (settings.PAI_DOCKER_SUBNET_POOL).
DEFAULT_SUBNET_POOL = "10.213.0.0/16"
MAX_TASKS_PER_NETWORK = 253  # a /24 minus network, gateway and broadcast


class NetworkGone(Exception):
    """The engine refused a task's container: its job network is not there (any more)."""


class JobNetworks:
    """The job networks one executor makes on its engine (names and marker in its namespace)."""

    def __init__(self, engine: Engine, *, namespace: str, subnet_pool: str | None, address: str) -> None:
        self.engine = engine
        self.namespace = namespace
        self.subnet_pool = ipaddress.IPv4Network(subnet_pool or DEFAULT_SUBNET_POOL)
        self.address = address  # the node's address: published ports bind here

    def name(self, job_id: int) -> str:
        return f"{self.namespace}-job-{job_id}"

    def addresses(self, job_id: int, job_name: str, tasks: list[tuple[str, int]]) -> dict[tuple[str, int], str]:
        """Each task's address on the job's network, made unless it is there."""
        if len(tasks) > MAX_TASKS_PER_NETWORK:
            raise ExecutorError(
                Message.of("exit.start.network_too_small", count=len(tasks), most=MAX_TASKS_PER_NETWORK)
            )
        try:
            subnet = self._ensure(job_id, job_name)
        except ENGINE_ERRORS as exc:
            raise ExecutorError(Message.of("exit.start.no_network", said=explain(exc)), failure_of(exc)) from exc
        # .1 is the gateway; tasks get .2, .3, ... in (role, index) order: the same on every
        # call, so a job retry finds its tasks at the addresses it had.
        hosts = iter(subnet.hosts())
        next(hosts)
        return {task: str(next(hosts)) for task in sorted(tasks)}

    def make_again(self, launch: TaskLaunch) -> None:
        """The job's network gone meanwhile (removed by a clean-up that a killed scheduler had
        sent, or anyone's hand) made again, on the subnet that holds the task's address; or, where
        several bear its name, the spares removed."""
        try:
            self._duplicated(self.name(launch.job_id))
            self._ensure(launch.job_id, launch.job_name, _subnet_of(launch.ip))
        except ENGINE_ERRORS as exc:
            raise ExecutorError(Message.of("exit.start.no_network", said=explain(exc)), failure_of(exc)) from exc

    def remove(self, job_id: int) -> None:
        """The job's network removed by its name: one call (a listing first made two of each job's
        end). Where several bear the name (see _duplicated) the engine refuses the name as
        ambiguous: each is removed by its id. Gone already is no error."""
        name = self.name(job_id)
        try:
            self.engine.api.remove_network(name)  # (a name with "-job-" is no id's prefix: never another's)
            return
        except NotFound:
            return
        except APIError as exc:
            if "ambiguous" not in str(exc):
                raise
        for network in self._named(name):
            with contextlib.suppress(NotFound):  # (gone meanwhile: a late call of an earlier try)
                self.engine.api.remove_network(network["Id"])

    def leftover_jobs(self) -> set[int]:
        """The jobs whose networks this engine holds (by their labels)."""
        networks = self.engine.api.networks(filters={"label": [marker(self.namespace)]})
        ids = {str((network.get("Labels") or {}).get("pai.job-id", "")) for network in networks}
        return {int(job_id) for job_id in ids if job_id.isdigit()}

    def host_options(self, launch: TaskLaunch, ports: list[int]) -> dict[str, Any]:
        """The job's own network, its ports published on the node's address (an app's, on the
        portal's own engine, nowhere); or, for a job that spans nodes, the node's network itself,
        where the task binds its ports directly. Either way its job-mates' names are in /etc/hosts
        from its first line (the job network's DNS knows a container only once it runs)."""
        if launch.host_network:
            # On the node's network NET_RAW would let a task sniff or forge other jobs' traffic.
            return {"network_mode": "host", "extra_hosts": launch.extra_hosts, "cap_drop": ["NET_RAW"]}
        # An app's port stays on the job's network, where the portal's machine reaches it (app_ports.py).
        unpublished = set(launch.app_ports) if portals_own_engine(self.engine.docker_url) else set()
        return {
            "network_mode": self.name(launch.job_id),
            "port_bindings": {port: (self.address, port) for port in ports if port not in unpublished},
            # (Docker writes the task's own name: a second line would make `hostname -i` say it twice)
            "extra_hosts": {name: ip for name, ip in launch.extra_hosts.items() if name != launch.hostname},
        }

    def endpoint(self, launch: TaskLaunch) -> dict[str, Any] | None:
        """The task's fixed address and DNS alias `<role>-<index>` on its job network."""
        if launch.host_network:
            return None
        api = self.engine.api
        endpoint = api.create_endpoint_config(aliases=[launch.hostname], ipv4_address=launch.ip or None)
        return dict(api.create_networking_config({self.name(launch.job_id): endpoint}))

    def find(self, name: str) -> dict[str, Any] | None:
        """The network of that exact name; of several (see _duplicated), the one kept."""
        named = self._named(name)
        if not named:
            return None
        return dict(self.engine.api.inspect_network(_kept(named)["Id"]))

    def _ensure(
        self, job_id: int, job_name: str, preferred: ipaddress.IPv4Network | None = None
    ) -> ipaddress.IPv4Network:
        """The job's network, made unless it is there (`preferred`: the subnet to try first, the
        one its tasks' addresses were given in)."""
        api = self.engine.api
        name = self.name(job_id)
        existing = self.find(name)
        if existing is not None:
            return _network_subnet(existing)
        taken = [_network_subnet(n) for n in api.networks() if _has_subnet(n)]
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
                api.create_network(name, driver="bridge", ipam=ipam, labels=labels, check_duplicate=True)
            except APIError as exc:
                existing = self.find(name)
                if existing is not None:  # a concurrent create (one past its deadline, still running) made it
                    return _network_subnet(existing)
                if "overlap" in str(exc).lower():  # another job took this subnet just now
                    continue
                raise
            # check_duplicate is best effort: two creates side by side can both succeed, on two
            # subnets, and the engine then refuses "network ... is ambiguous" at every start.
            return _network_subnet(self.find(name) or {}) if self._duplicated(name) else subnet
        raise ExecutorError(Message.of("exit.start.no_subnet", pool=str(self.subnet_pool)))

    def _named(self, name: str) -> list[dict[str, Any]]:
        """The networks of exactly that name (the engine's filter also matches names containing it)."""
        return [network for network in self.engine.api.networks(names=[name]) if network.get("Name") == name]

    def _duplicated(self, name: str) -> bool:
        """Whether several networks bear the job network's name; if so, all but the kept one that
        no container uses are removed (every caller keeps the same one, see _kept)."""
        api = self.engine.api
        named = self._named(name)
        if len(named) < 2:
            return False
        kept = _kept(named)
        for network in named:
            if network["Id"] != kept["Id"] and not api.inspect_network(network["Id"]).get("Containers"):
                try:
                    api.remove_network(network["Id"])
                except APIError as exc:
                    log.warning("removing a duplicate of network %s: %s", name, explain(exc))
        return True


def network_gone(launch: TaskLaunch, exc: BaseException) -> bool:
    """Whether the engine refused the container because the job's network is not there."""
    if launch.host_network or not isinstance(exc, APIError):
        return False
    said = explain(exc).lower()
    if "network" in said and "is ambiguous" in said:  # two of its name (see JobNetworks._duplicated)
        return True
    return "network" in said and ("not found" in said or "no such network" in said)


def _has_subnet(network: dict[str, Any]) -> bool:
    configs = (network.get("IPAM") or {}).get("Config") or []
    return any(c.get("Subnet") and ":" not in c["Subnet"] for c in configs)


def _kept(networks: list[dict[str, Any]]) -> dict[str, Any]:
    """Of several networks of one name, the one every caller keeps: the first created (it got the
    subnet the job's addresses were given in; a later duplicate had to take another)."""
    return min(networks, key=lambda network: (network.get("Created", ""), network["Id"]))


def _network_subnet(network: dict[str, Any]) -> ipaddress.IPv4Network:
    for config in (network.get("IPAM") or {}).get("Config") or []:
        subnet = config.get("Subnet") or ""
        if subnet and ":" not in subnet:
            return ipaddress.IPv4Network(subnet)
    raise ExecutorError(Message.of("exit.start.no_ipv4_subnet", network=str(network.get("Name"))))


def _subnet_of(ip: str) -> ipaddress.IPv4Network | None:
    """The /24 a task's address was given in (job networks are /24s), or None without one."""
    try:
        return ipaddress.IPv4Network(f"{ip}/24", strict=False) if ip else None
    except ValueError:
        return None
