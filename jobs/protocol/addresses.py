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


def inside_reason(text: str) -> str | None:
    """Why an address is inside the portal's network ("a loopback address"...), or None for one
    outside it (or text that is no address). Anything not globally reachable is inside; the
    commonest kinds are named."""
    address = as_address(text)
    if address is None:
        return None
    for test, why in (
        (address.is_loopback, "a loopback address"),
        (address.is_link_local, "a link-local address"),
        (address.is_private, "a private address"),
        (address.is_multicast, "a multicast address"),
        (address.is_reserved or address.is_unspecified, "a reserved address"),
        (address in SHARED_SPACE, "a shared address"),
        (isinstance(address, ipaddress.IPv6Address) and address.is_site_local, "a site-local address"),
        (not address.is_global, "a special-purpose address"),
    ):
        if test:
            return why
    if isinstance(address, ipaddress.IPv6Address) and address.sixtofour is not None:
        return inside_reason(str(address.sixtofour))
    return None
