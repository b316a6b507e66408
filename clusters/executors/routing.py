"""A sandboxed task's routes, set by root over netlink from inside its network namespace: what
netns.py's `ip -batch` lines say, without starting nsenter, sh and ip for each task (~5 ms of CPU
and as long again of its start).

The calling thread enters the namespace (setns is per thread for network namespaces), opens a
netlink socket there, sends each change and reads its acknowledgement, and comes back. Only the
lines netns.TaskNetwork.routes() writes are understood (`changes` answers None for any other, and
the caller runs `ip` instead). Standard library only: the supervisor imports this.
"""

from __future__ import annotations

import ctypes
import ipaddress
import os
import re
import socket
import struct
from typing import NamedTuple

CLONE_NEWNET = 0x40000000
NETLINK_ROUTE = 0
RTM_NEWADDR, RTM_DELADDR, RTM_NEWROUTE = 20, 21, 24
NLM_F_REQUEST, NLM_F_ACK, NLM_F_EXCL, NLM_F_CREATE = 0x1, 0x4, 0x200, 0x400
NLMSG_ERROR = 2
IFA_ADDRESS, IFA_LOCAL = 1, 2
RTA_DST, RTA_OIF, RTA_GATEWAY = 1, 4, 5
RT_TABLE_MAIN, RTPROT_BOOT = 254, 3
RT_SCOPE_UNIVERSE, RT_SCOPE_HOST = 0, 254
RTN_UNICAST, RTN_UNREACHABLE = 1, 7

_ADDRESS = re.compile(r"address (add|del) (\d+\.\d+\.\d+\.\d+)/(\d+) dev (\S+)")
_UNREACHABLE = re.compile(r"route add unreachable (\d+\.\d+\.\d+\.\d+/\d+)")
_VIA = re.compile(r"route add (\d+\.\d+\.\d+\.\d+/\d+) via (\d+\.\d+\.\d+\.\d+) dev (\S+)")


class Change(NamedTuple):
    kind: str  # "address add", "address del", "unreachable", "via"
    network: str  # a.b.c.d/n
    device: str = ""
    gateway: str = ""


def changes(lines: list[str]) -> list[Change] | None:
    """The `ip -batch` lines as changes, or None when one of them is not understood here."""
    found = []
    for line in lines:
        if match := _ADDRESS.fullmatch(line):
            found.append(Change(f"address {match[1]}", f"{match[2]}/{match[3]}", match[4]))
        elif match := _UNREACHABLE.fullmatch(line):
            found.append(Change("unreachable", match[1]))
        elif match := _VIA.fullmatch(line):
            found.append(Change("via", match[1], match[3], match[2]))
        else:
            return None
    return found


def apply(netns: int, changes: list[Change], *, route_localnet: str | None = None) -> None:
    """Make the changes in the namespace open as `netns` (root); `route_localnet`: the interface
    that may carry 127/8 addresses out. Raises OSError with the kernel's errno."""
    own = os.open("/proc/thread-self/ns/net", os.O_RDONLY | os.O_CLOEXEC)
    try:
        _setns(netns)
        try:
            with socket.socket(socket.AF_NETLINK, socket.SOCK_RAW | socket.SOCK_CLOEXEC, NETLINK_ROUTE) as link:
                link.bind((0, 0))
                for sequence, change in enumerate(changes, start=1):
                    _request(link, sequence, change)
            if route_localnet:
                with open(f"/proc/sys/net/ipv4/conf/{route_localnet}/route_localnet", "w") as flag:
                    flag.write("1")
        finally:
            _setns(own)
    finally:
        os.close(own)


def _setns(fd: int) -> None:
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.setns(fd, CLONE_NEWNET) != 0:
        error = ctypes.get_errno()
        raise OSError(error, os.strerror(error))


def _request(link: socket.socket, sequence: int, change: Change) -> None:
    network = ipaddress.IPv4Network(change.network, strict=False)
    if change.kind.startswith("address"):
        address = ipaddress.IPv4Interface(change.network).ip.packed
        kind = RTM_NEWADDR if change.kind == "address add" else RTM_DELADDR
        flags = NLM_F_CREATE | NLM_F_EXCL if kind == RTM_NEWADDR else 0
        body = struct.pack("=BBBBi", socket.AF_INET, network.prefixlen, 0, RT_SCOPE_HOST, _index(change.device))
        body += _attribute(IFA_LOCAL, address) + _attribute(IFA_ADDRESS, address)
    else:
        kind, flags = RTM_NEWROUTE, NLM_F_CREATE | NLM_F_EXCL
        route_type = RTN_UNREACHABLE if change.kind == "unreachable" else RTN_UNICAST
        body = struct.pack(
            "=BBBBBBBBI",
            socket.AF_INET,
            network.prefixlen,
            0,  # source length
            0,  # TOS
            RT_TABLE_MAIN,
            RTPROT_BOOT,
            RT_SCOPE_UNIVERSE,
            route_type,
            0,  # flags
        )
        body += _attribute(RTA_DST, network.network_address.packed)
        if change.kind == "via":
            body += _attribute(RTA_GATEWAY, ipaddress.IPv4Address(change.gateway).packed)
            body += _attribute(RTA_OIF, struct.pack("=i", _index(change.device)))
    header = struct.pack("=IHHII", 16 + len(body), kind, NLM_F_REQUEST | NLM_F_ACK | flags, sequence, 0)
    link.send(header + body)
    _acknowledged(link, sequence)


def _index(device: str) -> int:
    return socket.if_nametoindex(device)  # (an ioctl on a socket of this thread's namespace)


def _attribute(kind: int, data: bytes) -> bytes:
    length = 4 + len(data)
    return struct.pack("=HH", length, kind) + data + b"\0" * (-length % 4)


def _acknowledged(link: socket.socket, sequence: int) -> None:
    while True:
        reply = link.recv(65536)
        offset = 0
        while offset + 16 <= len(reply):
            length, kind, _, answered, _ = struct.unpack_from("=IHHII", reply, offset)
            if kind == NLMSG_ERROR and answered == sequence:
                (error,) = struct.unpack_from("=i", reply, offset + 16)
                if error:
                    raise OSError(-error, os.strerror(-error))
                return
            offset += max(16, (length + 3) & ~3)
