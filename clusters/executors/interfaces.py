"""Which interface a task's distributed-training libraries use (NCCL, Gloo, OpenMPI): the variables
every executor sets (a job's own values win). Standard library only (the process supervisor's
side imports nothing of the portal's packages, but the executors all may import this).

With a network of its own (a Docker job network, a process task's namespace), the task's address
is on one interface, named for all of them. On the nodes' own networks NCCL and Gloo find the
interface themselves, but OpenMPI also takes bridges of one subnet on every node (docker0:
172.17.0.1 everywhere) for a way to its peers, and hangs: it is given the smallest network that
holds the job's task addresses, which leaves each node only the interface that carries its own
(one value for all: mpirun passes its own on to the daemons it starts)."""

from __future__ import annotations

import contextlib
import ipaddress
from collections.abc import Iterable

SOCKET_IFNAME_VARIABLES = ("NCCL_SOCKET_IFNAME", "GLOO_SOCKET_IFNAME")
# OpenMPI's interfaces (names, or networks in CIDR): the mpirun daemons and its TCP transport.
OPENMPI_INTERFACE_VARIABLES = ("OMPI_MCA_oob_tcp_if_include", "OMPI_MCA_btl_tcp_if_include")


def interface_variables(env: dict[str, str], own_interface: str | None) -> dict[str, str]:
    """The variables to set (none that `env`, the task's environment, has already): all naming
    `own_interface`, or, on the nodes' own networks (None), OpenMPI's the job's covering network."""
    if own_interface is not None:
        chosen = dict.fromkeys((*SOCKET_IFNAME_VARIABLES, *OPENMPI_INTERFACE_VARIABLES), own_interface)
    elif network := covering_network(value for key, value in env.items() if key.startswith("PAI_HOST_IP_")):
        chosen = dict.fromkeys(OPENMPI_INTERFACE_VARIABLES, network)
    else:
        chosen = {}
    return {name: value for name, value in chosen.items() if name not in env}


def covering_network(addresses: Iterable[str]) -> str | None:
    """The smallest IPv4 network (CIDR) that holds all the addresses; None when they are fewer
    than two (OpenMPI takes a /32 for "every interface") or have no 8 leading bits in common."""
    numbers = set()
    for address in addresses:
        with contextlib.suppress(ValueError):
            if (parsed := ipaddress.ip_address(address)).version == 4:
                numbers.add(int(parsed))
    if len(numbers) < 2:
        return None
    prefix = 32 - (min(numbers) ^ max(numbers)).bit_length()
    return str(ipaddress.ip_network((min(numbers), prefix), strict=False)) if prefix >= 8 else None
