"""The registries a job's images may name, judged where they resolve (the rule: jobs.protocol.images,
its address ranges the webhooks' own), at submit (jobs.actions) and again before each start
(scheduling.starting): a name's addresses may change after submit, and jobs submitted before the
rule was this strict still wait.

A judge answers for one submit (a sweep's runs ask each question once) or one round of starts: the
portal's own hosts read once, each host name resolved once."""

from __future__ import annotations

import socket
from urllib.parse import urlsplit

from django.conf import settings

from catalogue import Message
from clusters.models import Node
from jobs.protocol.errors import FieldError
from jobs.protocol.images import image_fields, image_registry_errors, pull_refusal, registry_of, split_registry
from jobs.protocol.spec import NormalizedSpec


def resolve(host: str) -> list[str]:
    """The addresses a host name resolves to here; none when it does not resolve."""
    try:
        return sorted({str(info[4][0]) for info in socket.getaddrinfo(host, None, type=socket.SOCK_STREAM)})
    except (OSError, UnicodeError):
        return []


def portal_own_hosts() -> set[str]:
    """Where the portal and its nodes answer: no image may make a node's engine send requests
    there (the engine would probe them for the user)."""
    hosts = {host for host in settings.ALLOWED_HOSTS if host != "*"}
    public_host = urlsplit(settings.PAI_PUBLIC_URL).hostname
    if public_host:
        hosts.add(public_host)
    hosts.update(Node.objects.values_list("address", flat=True))
    return hosts


class RegistryJudge:
    """The registry checks of one submit or one round of starts (see the module's docstring)."""

    def __init__(self) -> None:
        self._portal_hosts: set[str] | None = None
        self._resolved: dict[str, list[str]] = {}

    def portal_hosts(self) -> set[str]:
        if self._portal_hosts is None:
            self._portal_hosts = portal_own_hosts()
        return self._portal_hosts

    def resolve(self, host: str) -> list[str]:
        if host not in self._resolved:
            self._resolved[host] = resolve(host)
        return self._resolved[host]

    def errors(self, spec: NormalizedSpec, protocol_version: int) -> list[FieldError]:
        """At submit: a field error for each image whose registry is forbidden (the portal's hosts
        read only when an image names a registry: most name Docker Hub's)."""
        if not any(registry_of(image) for _, image in image_fields(spec, protocol_version)):
            return []
        return image_registry_errors(
            spec,
            protocol_version,
            portal_hosts=self.portal_hosts(),
            allowed=settings.PAI_ALLOWED_PRIVATE_REGISTRIES,
            resolve=self.resolve,
        )

    def read_hosts_for(self, images: list[str]) -> None:
        """Read the portal's hosts now (the database, on the caller's thread) when any image names a
        registry, so that `refusal` can run on other threads."""
        if any(registry_of(image) for image in images):
            self.portal_hosts()

    def refusal(self, image: str, *, after_failed_pull: bool = False) -> Message | None:
        """Before a start, and after a pull that failed (its name resolved afresh: the engine's
        look-up came after ours): the one sentence a forbidden registry gets (the job's error)."""
        registry = registry_of(image)
        if registry is None:
            return None
        if after_failed_pull:
            self._resolved.pop(split_registry(registry)[0], None)
        refused = pull_refusal(
            image,
            portal_hosts=self.portal_hosts(),
            allowed=settings.PAI_ALLOWED_PRIVATE_REGISTRIES,
            resolve=self.resolve,
            pulled=after_failed_pull,
        )
        return refused
