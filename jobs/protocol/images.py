"""Which registry an image name makes the node's engine contact, and the registries a job may not
name: the engine would send requests to the node itself (loopback), to the portal's network
(private, link-local: cloud metadata at 169.254.169.254) or to the portal's own hosts, on the
user's behalf (SSRF). A registry named by a host name is judged by the addresses the name resolves
to, with the webhooks' rule (jobs.protocol.addresses); one that does not resolve cannot be judged,
and is refused.

Pure: the portal's own host names, the registries an admin allows and the resolver come in as
arguments (jobs.registries hands them in, at submit and before each start)."""

from __future__ import annotations

import re
from collections.abc import Callable, Collection

from catalogue import Message
from jobs.protocol import texts
from jobs.protocol.addresses import IpAddress, as_address, inside_kind
from jobs.protocol.errors import FieldError
from jobs.protocol.spec import NormalizedSpec

ALLOW_SETTING = "PAI_ALLOWED_PRIVATE_REGISTRIES"
Resolver = Callable[[str], Collection[str]]  # a host name -> the addresses it resolves to (none: it does not)


# Docker's reference grammar (distribution/reference): [registry[:port]/]path[:tag][@digest].
_DOMAIN_COMPONENT = r"(?:[a-zA-Z0-9]|[a-zA-Z0-9][a-zA-Z0-9-]*[a-zA-Z0-9])"
_REGISTRY = re.compile(rf"(?:{_DOMAIN_COMPONENT}(?:\.{_DOMAIN_COMPONENT})*|\[[0-9a-fA-F:.]+\])(?::[0-9]+)?")
_PATH_COMPONENT = re.compile(r"[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*")
_TAG = re.compile(r"[\w][\w.-]{0,127}")
_DIGEST = re.compile(r"[A-Za-z][A-Za-z0-9]*(?:[-_+.][A-Za-z][A-Za-z0-9]*)*:[0-9a-fA-F]{32,}")
NAME_MAX = 255
EXAMPLE = "pytorch/pytorch:2.1.0-cuda12.1-cudnn8-runtime"


def reference_error(image: str) -> Message | None:
    """Why `image` is not an image reference Docker accepts (or would read as the user meant), or
    None. Checked at submit so a typo is a 400 naming the field, not a failed, retried task."""
    if not image.strip():
        return Message.of("config.image.empty")
    space = Message.of("config.image.space", example=EXAMPLE) if any(c.isspace() for c in image) else None
    found = _grammar_error("".join(image.split()))
    if space and found:
        return Message.of("config.image.and", first=space, then=found)
    return space or found


def _grammar_error(image: str) -> Message | None:
    name, at, digest = image.partition("@")
    if at and not _DIGEST.fullmatch(digest):
        return Message.of("config.image.digest")
    last_slash = name.rfind("/")
    name, colon, tag = (name[:i], ":", name[i + 1 :]) if (i := name.rfind(":")) > last_slash else (name, "", "")
    if colon and not _TAG.fullmatch(tag):
        return Message.of("config.image.tag", tag=tag)
    if len(name) > NAME_MAX:
        return Message.of("config.image.name_too_long", most=NAME_MAX)
    registry = registry_of(name)
    path = name[len(registry) + 1 :] if registry else name
    if registry is not None:
        if not _REGISTRY.fullmatch(registry):
            return Message.of("config.image.registry_host", host=registry)
        if "." not in registry and ":" not in registry and registry != "localhost" and not registry.startswith("["):
            # Docker reads a first part with capitals as a registry host: a typo of a Docker Hub name.
            return Message.of("config.image.capitals", first=registry, example=f"{registry.lower()}/{path.lower()}")
    components = path.split("/")
    for component in components:
        if not _PATH_COMPONENT.fullmatch(component):
            if component.lower() != component and _PATH_COMPONENT.fullmatch(component.lower()):
                return Message.of("config.image.lowercase", lower=path.lower(), given=path)
            return Message.of("config.image.path_part", part=component)
    return None


def image_reference_errors(spec: NormalizedSpec, protocol_version: int) -> list[FieldError]:
    """A field error for each image that is not a valid Docker image reference."""
    return [
        (field, Message.of("config.image.invalid", image=image, why=reason))
        for field, image in image_fields(spec, protocol_version)
        if (reason := reference_error(image)) is not None
    ]


def registry_of(image: str) -> str | None:
    """The registry part of an image name as Docker reads it (`host[:port]`), or None for Docker
    Hub: the first path component is a registry when it has a dot or a colon, is `localhost`, or
    has capitals (distribution/reference's splitDockerDomain)."""
    first, slash, _rest = image.partition("/")
    if not slash:
        return None
    if "." in first or ":" in first or first == "localhost" or first != first.lower():
        return first
    return None


def split_registry(registry: str) -> tuple[str, str]:
    """`[::1]:5000` -> ("::1", "5000"); `host:5000` -> ("host", "5000"); `host` -> ("host", "")."""
    if registry.startswith("["):
        host, _, rest = registry[1:].partition("]")
        return host.lower(), rest.removeprefix(":")
    host, _, port = registry.partition(":")
    return host.lower().rstrip("."), port


def private_reason(
    host: str, portal_hosts: Collection[str], resolve: Resolver, *, refuse_unresolved: bool = True
) -> Message | None:
    """Why the engine must not be sent to this host (a name or an address), or None (also for a
    name that does not resolve here, unless `refuse_unresolved`)."""
    if host == "localhost" or host.endswith(".localhost"):
        return texts.ADDRESS_KINDS["loopback"]()
    address = as_address(host)
    if address is not None:
        return _address_reason(host, address, portal_hosts)
    if _is_portal_host(host, None, portal_hosts):
        return Message.of("address.portal_own")
    found = sorted(resolve(host))
    if not found:
        return Message.of("address.unresolved") if refuse_unresolved else None
    for text in found:
        resolved = as_address(text)
        if resolved is not None and (why := _address_reason(host, resolved, portal_hosts)) is not None:
            if why.code == "address.portal_own":
                return Message.of("address.name_for_portal", kind=why)
            return Message.of("address.name_for", kind=why, address=text)
    return None


def _address_reason(host: str, address: IpAddress, portal_hosts: Collection[str]) -> Message | None:
    """The node itself and link-local services first, then the portal's own hosts, then the rest of
    the portal's network: the most telling reason."""
    kind = inside_kind(str(address))
    if kind in ("loopback", "link_local"):
        return texts.ADDRESS_KINDS[kind]()
    if _is_portal_host(host, address, portal_hosts):
        return Message.of("address.portal_own")
    return texts.ADDRESS_KINDS[kind]() if kind else None


def _is_portal_host(host: str, address: IpAddress | None, portal_hosts: Collection[str]) -> bool:
    for own in portal_hosts:
        own = own.lower().strip("[]").rstrip(".")
        if own.startswith("."):  # Django's ALLOWED_HOSTS: the domain and every subdomain
            if host == own[1:] or host.endswith(own):
                return True
        elif host == own or (address is not None and address == as_address(own)):
            return True
    return False


def is_allowed(registry: str, allowed: Collection[str]) -> bool:
    """An admin's entry `host:port` allows that registry, `host` every port of it."""
    host, port = split_registry(registry)
    for entry in allowed:
        allowed_host, allowed_port = split_registry(entry.strip())
        if allowed_host == host and allowed_port in ("", port):
            return True
    return False


def image_fields(spec: NormalizedSpec, protocol_version: int) -> list[tuple[str, str]]:
    """(field path as the user wrote it, image) for each image of a normalized spec."""
    images = [
        (i, p.get("uri")) for i, p in enumerate(spec.get("prerequisites") or []) if p.get("type") == "dockerimage"
    ]
    if protocol_version == 1:
        return [("image", str(uri)) for _, uri in images if isinstance(uri, str)]
    return [(f"prerequisites[{i}].uri", uri) for i, uri in images if isinstance(uri, str)]


def registry_refusal(
    image: str,
    *,
    portal_hosts: Collection[str],
    allowed: Collection[str],
    resolve: Resolver,
    refuse_unresolved: bool = True,
) -> Message | None:
    """Why the node's engine may not pull `image` (its registry, judged), or None. (A name that
    does not resolve in a reference Docker would refuse anyway is reference_error's to explain.)"""
    registry = registry_of(image)
    if registry is None or is_allowed(registry, allowed):
        return None
    refuse_unresolved = refuse_unresolved and reference_error(image) is None
    reason = private_reason(split_registry(registry)[0], portal_hosts, resolve, refuse_unresolved=refuse_unresolved)
    if reason is None:
        return None
    return Message.of("config.registry_refused", registry=registry, reason=reason, setting=ALLOW_SETTING)


def image_registry_errors(
    spec: NormalizedSpec,
    protocol_version: int,
    *,
    portal_hosts: Collection[str],
    allowed: Collection[str],
    resolve: Resolver,
) -> list[FieldError]:
    """A field error for each image whose registry is private to the node or the portal."""
    return [
        (field, refusal)
        for field, image in image_fields(spec, protocol_version)
        if (refusal := registry_refusal(image, portal_hosts=portal_hosts, allowed=allowed, resolve=resolve))
    ]


def pull_refusal(
    image: str,
    *,
    portal_hosts: Collection[str],
    allowed: Collection[str],
    resolve: Resolver,
    pulled: bool = False,
) -> Message | None:
    """A task's start refused for a registry judged forbidden, before the pull or (`pulled`) after
    one that failed: one sentence made of the image and the addresses alone, so the job's error
    never tells what the registry answered, or whether anything listened there. A name that does
    not resolve here is left to the engine before the pull (a resolver's hiccup ends no job), and
    refused after it failed (the engine may have found it elsewhere)."""
    refusal = registry_refusal(
        image, portal_hosts=portal_hosts, allowed=allowed, resolve=resolve, refuse_unresolved=pulled
    )
    return Message.of("config.pull_refused", image=image, refusal=refusal) if refusal else None
