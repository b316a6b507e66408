"""Where an interactive app's port is open: to its own job's tasks and the portal's proxy, never on
the node's shared address (docs/architecture.md, "Networks", "Apps").

- A process task's app port is forwarded by pasta from the job's own loopback address on the
  portal's machine (`job_app_address`, in 127.128.0.0/9) instead of the node's: the proxy connects
  there, other tasks cannot (their namespaces route 127/8 nowhere), and the job's tasks reach it at
  `<node address>:<port>` as for any port, their namespaces translating that one destination.
- A container on its job's network on the portal's own engine has its app ports published nowhere:
  its job-mates reach it on their network, the proxy at the task's own address on it (the portal's
  machine routes to its engine's networks; other jobs' tasks, other machines and process tasks do
  not).
- Anywhere else (an engine the portal reaches over the network, a job on the nodes' own networks,
  Slurm) the task's ports are where all its ports are, on the node's address.

Standard library only: the supervisor imports it (through netns.py).
"""

from __future__ import annotations

import ipaddress

APP_ADDRESSES = ipaddress.IPv4Network("127.128.0.0/9")


def job_app_address(job_id: int) -> str:
    """The job's own address on the portal's machine's loopback, by its id (127.128.0.1 up to
    127.255.255.254): two jobs share one only when their ids are 8 million apart."""
    return str(APP_ADDRESSES.network_address + 1 + job_id % (APP_ADDRESSES.num_addresses - 2))


def portals_own_engine(docker_url: str | None) -> bool:
    """An engine the portal reaches at the default local socket runs on the portal's machine, in its
    network namespace: the machine routes to its job networks. Any engine named by a URL may be
    elsewhere (another machine, the dev cluster's namespaces)."""
    return not docker_url


def app_host(executor: str, docker_url: str, node_address: str, task_ip: str, job_id: int) -> str:
    """Where the portal's proxy reaches a port of an app that a task serves (see the module)."""
    if executor == "process":
        return job_app_address(job_id)
    own_network = bool(task_ip) and task_ip != node_address  # (on the nodes' networks it is the node's)
    if executor == "docker" and portals_own_engine(docker_url) and own_network:
        return task_ip
    return node_address
