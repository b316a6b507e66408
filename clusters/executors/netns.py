"""A sandboxed process task's own network namespace, with Debian's `pasta` (package `passt`).

Why: on the node's network a task could listen on 127.0.0.1:<any port>, where a browser sends the
portal's cookies (cookies ignore ports), and reach Docker jobs' private bridge addresses.

How: `pasta` (run as the task's own uid, before bwrap) makes a user and network namespace,
gives it one interface (TASK_ADDRESS behind TASK_GATEWAY) and carries its traffic as ordinary
sockets of the node:
- outbound: a task's connection becomes pasta's connection from the node, so the internet and
  other nodes are reached as from the node itself;
- inbound: only the task's declared ports, bound by pasta on the node's task address alone (never
  on 127.0.0.1, never on other addresses), are forwarded in (a task binding 0.0.0.0 gets them);
- `--no-map-gw` and `-T none -U none`: the host's loopback is never mapped into the namespace.
Before bwrap starts, a setup script, run as the namespace's owner, adds `unreachable` routes for
the node's Docker bridges, the Docker subnet pool, link-local addresses and the rest of 127/8:
the kernel of the task's namespace refuses those before pasta sees a packet. The task itself runs
in bwrap's nested user namespace without capabilities over this network namespace, so it cannot
remove them (nor nft rules, nor addresses). This needs no host firewall, so it holds for a
portal that is not root as well, and leaves nothing behind when the task ends.

A node address in 127/8 (one machine, e.g. 127.0.0.2) is routed out through pasta, so a job's
tasks still reach each other at `<node address>:<declared port>`.

slirp4netns would do the same but needs a second process started against the namespace's pid and
its own synchronisation; pasta runs the command itself and exits with its status.
"""

from __future__ import annotations

import ipaddress
import shlex
import shutil
import subprocess
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

TASK_INTERFACE = "eth0"
TASK_ADDRESS = "10.0.2.100"  # slirp4netns' and rootless podman's choice: private to each namespace
TASK_PREFIX = 24
TASK_GATEWAY = "10.0.2.2"  # pasta itself; with --no-map-gw never the host
LINK_LOCAL = "169.254.0.0/16"  # cloud metadata services, other hosts' link-local services
LOOPBACK = "127.0.0.0/8"
# Docker names its bridges docker0 and br-<12 hex digits of the network id>.
DOCKER_BRIDGE_PREFIXES = ("docker", "br-")
PROBE_TIMEOUT_S = 20


@dataclass(frozen=True)
class TaskNetwork:
    docker_subnet_pool: str = ""  # the portal's pool for job networks (PAI_DOCKER_SUBNET_POOL)
    pasta: str = "pasta"

    def probe(self, trial: Sequence[str]) -> str:
        """'' when `trial` (a command line from wrap(), bwrap nested) runs `true` here, else why not."""
        if shutil.which(self.pasta) is None:
            return f"pasta ({self.pasta}) is not installed on this node (Debian: apt-get install passt)"
        try:
            result = subprocess.run(
                [*trial, "true"],
                capture_output=True,
                text=True,
                timeout=PROBE_TIMEOUT_S,
                check=False,
            )
        except (OSError, subprocess.SubprocessError) as exc:
            return f"pasta cannot run here: {exc}"
        if result.returncode != 0:
            lines = [line for line in result.stderr.splitlines() if "syslog" not in line]  # (pasta: no syslog here)
            lines = lines or [f"exit {result.returncode}"]
            return f"pasta cannot give tasks a network of their own here: {lines[-1]}"
        return ""

    def wrap(self, address: str, ports: dict[str, list[int]]) -> list[str]:
        """The command line prefix that runs what follows it in the task's own namespace."""
        forwarded = sorted({port for numbers in ports.values() for port in numbers})
        args = [self.pasta, "--quiet", "--foreground", "--config-net", "--no-map-gw", "--ns-ifname", TASK_INTERFACE]
        args += ["--address", TASK_ADDRESS, "--netmask", str(TASK_PREFIX), "--gateway", TASK_GATEWAY]
        args += ["--tcp-ns", "none", "--udp-ns", "none"]  # nothing of the host's loopback, ever
        for option in ("--tcp-ports", "--udp-ports"):
            if not forwarded:
                args += [option, "none"]  # (pasta's default would forward every port the task binds)
            for port in forwarded:
                args += [option, f"{address}/{port}"]
        return [*args, "--", "sh", "-c", self.setup_script(address), "pai-netns"]

    def setup_script(self, address: str) -> str:
        """Routes set by the namespace's owner before the sandbox starts; then exec the rest."""
        node = ipaddress.ip_address(address)
        lines = [
            "set -e",
            # 127.0.0.1 stays the task's own; the rest of 127/8 is unreachable, or is the node.
            "ip addr del 127.0.0.1/8 dev lo",
            "ip addr add 127.0.0.1/32 dev lo",
        ]
        lines += [f"ip route add unreachable {subnet}" for subnet in self.blocked_subnets()]
        if node.version == 4 and node.is_loopback and str(node) != "127.0.0.1":
            lines += [
                f"ip route add {node}/32 via {TASK_GATEWAY} dev {TASK_INTERFACE}",
                f"echo 1 > /proc/sys/net/ipv4/conf/{TASK_INTERFACE}/route_localnet",
            ]
        lines.append('exec "$@"')
        return "\n".join(lines)

    def blocked_subnets(self) -> list[str]:
        """What a task must not reach: loopback, link-local, the Docker pool and bridges."""
        subnets = [LOOPBACK, LINK_LOCAL, *docker_bridge_subnets()]
        if self.docker_subnet_pool:
            subnets.append(str(ipaddress.ip_network(self.docker_subnet_pool, strict=False)))
        return list(dict.fromkeys(shlex.quote(subnet) for subnet in subnets))


def docker_bridge_subnets(routes: Path = Path("/proc/net/route")) -> list[str]:
    """The IPv4 subnets of this node's Docker bridges (docker0's 172.17.0.0/16, user networks),
    read from the kernel's routing table at each start (networks come and go)."""
    try:
        lines = routes.read_text().splitlines()[1:]
    except OSError:
        return []
    return list(_bridge_subnets(line.split() for line in lines))


def _bridge_subnets(rows: Iterable[list[str]]) -> Iterable[str]:
    for row in rows:
        if len(row) < 8 or not row[0].startswith(DOCKER_BRIDGE_PREFIXES):
            continue
        destination = ipaddress.IPv4Address(bytes.fromhex(row[1])[::-1])
        mask = ipaddress.IPv4Address(bytes.fromhex(row[7])[::-1])
        if int(mask):
            yield str(ipaddress.IPv4Network(f"{destination}/{mask}", strict=False))
