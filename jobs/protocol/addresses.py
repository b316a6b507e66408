"""Addresses inside the portal's network: where neither a webhook's POST nor a node's engine pulling
an image may be sent for a user (loopback, private, link-local, multicast, reserved, shared,
site-local: anything not globally reachable), and host
names written as numbers read as the C resolver reads them. Pure; one rule for both."""

from __future__ import annotations

import ipaddress
import socket

IpAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
SHARED_SPACE = ipaddress.ip_network("100.64.0.0/10")  # RFC 6598: carrier-grade NAT, a cloud's metadata service


def as_address(host: str) -> IpAddress | None:
    """The address a host written as a number names, including the legacy IPv4 forms the C
    resolver still accepts (`127.1`, `2130706433`, `0x7f.0.0.1`)."""
    try:
        address = ipaddress.ip_address(host.split("%", 1)[0])  # fe80::1%eth0: the zone is not the address
    except ValueError:
        try:
            return ipaddress.IPv4Address(socket.inet_aton(host))
        except (OSError, ValueError):
            return None
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        return address.ipv4_mapped
    return address


def inside_kind(text: str) -> str | None:
    """Which kind of address inside the portal's network this is (a key of jobs.protocol.texts.ADDRESS_KINDS), or None
    for one outside it (or text that is no address). Anything not globally reachable is inside;
    the commonest kinds are named."""
    address = as_address(text)
    if address is None:
        return None
    for test, kind in (
        (address.is_loopback, "loopback"),
        (address.is_link_local, "link_local"),
        (address.is_private, "private"),
        (address.is_multicast, "multicast"),
        (address.is_reserved or address.is_unspecified, "reserved"),
        (address in SHARED_SPACE, "shared"),
        (isinstance(address, ipaddress.IPv6Address) and address.is_site_local, "site_local"),
        (not address.is_global, "special"),
    ):
        if test:
            return kind
    if isinstance(address, ipaddress.IPv6Address) and address.sixtofour is not None:
        return inside_kind(str(address.sixtofour))
    return None
