"""Webhooks: a JSON POST to a user's (or, for every job, an admin's) URL when a job reaches a
state they picked, including OpenPAI's `running` and `retried`, and the portal's `preempted`.

A job's change writes one notice per matching hook into the outbox (`enqueue`, called by
jobs.notifications in the change's transaction; jobs/outbox.py sends them from the sampler's
process, so a slow or dead receiver never holds a scheduler pass). Each POST carries Slack's
`text` (Slack, Teams, Mattermost incoming webhooks show it) and the job's fields, and is signed:
`X-PAI-Signature: sha256=<HMAC-SHA256 of "<timestamp>.<body>" with the hook's secret>` beside
`X-PAI-Timestamp`, `X-PAI-Event` and `X-PAI-Delivery` (the notice's id: a receiver drops repeats by
it, delivery being at least once). Each hook's POSTs go in order; a non-2xx answer or no answer
rests the hook (the outbox's backoff), then its POSTs are tried again.

Targets: http(s) only, and never a loopback, private, link-local, reserved, multicast, shared
(100.64.0.0/10: carrier-grade NAT, a cloud's metadata service at 100.100.100.200), site-local or
other address that is not globally reachable (the portal's own network, its provider's services)
unless `PAI_WEBHOOK_ALLOWED_HOSTS` names the host: checked when a hook
is saved and again at each POST, which connects to the very address checked (a name that resolves
elsewhere later cannot send it inside).
"""

from __future__ import annotations

import hashlib
import hmac
import http.client
import json
import logging
import secrets
import socket
import ssl
import time
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from django.conf import settings
from django.db.models import Q
from django.utils import timezone

from catalogue import Message
from jobs.crypto import decrypt_text, encrypt_text
from jobs.models import Job, Notice, Webhook, diagnostics_messages
from jobs.protocol.addresses import inside_kind
from jobs.protocol.images import is_allowed
from jobs.protocol.texts import ADDRESS_KINDS

log = logging.getLogger("pai.webhooks")

EVENTS = ("running", "preempted", "retried", "succeeded", "failed", "stopped", "alert")  # alert: scheduling.alerts
# How a notice (mail or POST) says an event; the others say the state's name.
EVENT_WORDS = {"running": "is running", "preempted": "was preempted", "retried": "is being retried"}
MAX_HOOKS_PER_USER = 20


class TargetError(ValueError):
    """Why a URL may not receive webhooks (shown beside the field): `message`; str() its English."""

    def __init__(self, message: Message) -> None:
        super().__init__(message.text)
        self.message = message


@dataclass(frozen=True)
class Target:
    scheme: str
    host: str
    port: int
    path: str  # with its query
    address: str  # the checked address the POST connects to


def check_target(url: str) -> Target:
    """The URL's target, resolved and checked; raises TargetError saying why not."""
    parts = urlsplit(url.strip())
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise TargetError(Message.of("webhook.not_http"))
    if parts.username or parts.password:
        raise TargetError(Message.of("webhook.credentials"))
    try:
        port = parts.port or (443 if parts.scheme == "https" else 80)
    except ValueError as exc:
        raise TargetError(Message.of("webhook.bad_port")) from exc
    host = parts.hostname.lower().rstrip(".")
    try:
        found = {str(info[4][0]) for info in socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)}
    except (OSError, UnicodeError) as exc:
        raise TargetError(Message.of("webhook.no_host", host=host)) from exc
    allowed = is_allowed(f"[{host}]:{port}" if ":" in host else f"{host}:{port}", settings.PAI_WEBHOOK_ALLOWED_HOSTS)
    for address in sorted(found):
        kind = inside_kind(address)
        if kind and not allowed:
            place = ADDRESS_KINDS[kind]()
            raise TargetError(
                Message.of("webhook.inside", place=place, address=address, setting="PAI_WEBHOOK_ALLOWED_HOSTS")
            )
    path = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    return Target(parts.scheme, host, port, path, sorted(found)[0])


def create_hook(owner: Any, url: str, events: list[str], everyone: bool = False) -> tuple[Webhook, str]:
    """A new hook and its secret (shown once). Raises TargetError for a URL it may not call."""
    check_target(url)
    unknown = [e for e in events if e not in EVENTS]
    if unknown or not events:
        raise TargetError(Message.of("webhook.pick_events", events=", ".join(EVENTS)))
    events = [e for e in EVENTS if e in events]  # (in the order they happen)
    if not everyone and Webhook.objects.filter(owner=owner).count() >= MAX_HOOKS_PER_USER:
        raise TargetError(Message.of("webhook.too_many", count=MAX_HOOKS_PER_USER))
    secret = secrets.token_urlsafe(32)
    hook = Webhook.objects.create(
        owner=None if everyone else owner, url=url.strip(), secret_encrypted=encrypt_text(secret), events=events
    )
    forget_hooks()
    return hook, secret


def remove_hook(hook: Webhook) -> None:
    hook.delete()
    forget_hooks()


# ---- the outbox -----------------------------------------------------------------------------------
_hooks_cache: tuple[float, list[Webhook]] = (float("-inf"), [])
HOOKS_CACHE_S = 2.0  # a job change looks the hooks up at most this often per process


def _all_hooks() -> list[Webhook]:
    global _hooks_cache
    now = time.monotonic()
    if now - _hooks_cache[0] > HOOKS_CACHE_S:
        _hooks_cache = (now, list(Webhook.objects.all()))
    return _hooks_cache[1]


def forget_hooks() -> None:
    """After a hook is added or removed in this process: the next change sees it."""
    global _hooks_cache
    _hooks_cache = (float("-inf"), [])


def _hooks_for(owner_id: int, event: str) -> list[Webhook]:
    return [h for h in _all_hooks() if event in h.events and h.owner_id in (None, owner_id)]


def wanted(owner_id: int, event: str) -> bool:
    """Whether a hook wants this owner's jobs' `event` (no query while the hooks are cached)."""
    return bool(_hooks_for(owner_id, event))


def enqueue(job: Job, event: str, detail: Message | None = None) -> int:
    """One delivery per hook of the job's owner, or of the deployment, that asked for `event`;
    `detail`: what the text adds (who preempted the job)."""
    hooks = _hooks_for(job.owner_id, event)
    return _queue(hooks, job, event, payload_of(job, event, detail)) if hooks else 0


def enqueue_alert(owner_id: int | None, job: Job | None, text: str) -> int:
    """An alert rule's notice (scheduling.alerts): to the owner's hooks that asked for `alert`, or
    (owner None: for the admins) to the deployment's."""
    hooks = [h for h in _all_hooks() if "alert" in h.events and h.owner_id == owner_id]
    payload = {**(payload_of(job, "alert") if job is not None else {"event": "alert"}), "text": text}
    return _queue(hooks, job, "alert", payload) if hooks else 0


def _queue(hooks: list[Webhook], job: Job | None, event: str, payload: dict[str, Any]) -> int:
    """The outbox's notices, for the hooks that still exist (the cache may hold one removed since, in
    another process)."""
    live = set(Webhook.objects.filter(pk__in=[h.pk for h in hooks]).values_list("pk", flat=True))
    now = timezone.now()
    rows = [
        Notice(channel=Notice.Channel.WEBHOOK, webhook=h, job=job, event=event, payload=payload, next_attempt_at=now)
        for h in hooks
        if h.pk in live
    ]
    Notice.objects.bulk_create(rows)
    return len(rows)


def payload_of(job: Job, event: str, detail: Message | None = None) -> dict[str, Any]:
    """The POST's JSON. What the portal says of the job comes in English (`text`, `detail`,
    `exitDiagnostics`: what chat hooks post) and, beside it, as its message (`detailMessage`,
    `exitDiagnosticsMessages`: code and parameters, as the API answers them)."""
    url = job.public_url()
    text = f"Job {job.full_name} {EVENT_WORDS.get(event, event)}" + (
        f" (exit code {job.exit_code})" if job.exit_code else ""
    )
    return {
        "text": f"{text}: {url}" + (f"\n{detail.text}" if detail else ""),
        "event": event,
        **({"detail": detail.text, "detailMessage": detail.as_dict()} if detail else {}),
        "job": {
            "name": job.name,
            "username": job.owner.get_username(),
            "fullName": job.full_name,
            "state": job.state,
            "virtualCluster": job.virtual_cluster.name,
            "retries": job.retries_used,
            "exitCode": job.exit_code,
            "exitDiagnostics": job.exit_diagnostics,
            "exitDiagnosticsMessages": diagnostics_messages(job),
            "submittedTime": job.created_at.isoformat(),
            "completedTime": job.completed_at.isoformat() if job.completed_at else None,
            "url": url,
        },
    }


# ---- sending (jobs.outbox's sender calls `post` on a thread of its pool) ----------------------------
def signature(secret: str, timestamp: str, body: bytes) -> str:
    return "sha256=" + hmac.new(secret.encode(), timestamp.encode() + b"." + body, hashlib.sha256).hexdigest()


def post(delivery: Notice) -> tuple[bool, str]:
    """(delivered, what happened). Never raises."""
    assert delivery.webhook is not None  # (the outbox hands it webhook notices only)
    try:
        target = check_target(delivery.webhook.url)
    except TargetError as exc:
        return False, f"refused: {exc}"
    body = json.dumps(delivery.payload).encode()
    timestamp = str(int(time.time()))
    headers = {
        "Content-Type": "application/json",
        "User-Agent": "PAI-Portal-Webhook",
        "X-PAI-Event": delivery.event,
        "X-PAI-Delivery": str(delivery.pk),
        "X-PAI-Timestamp": timestamp,
        "X-PAI-Signature": signature(decrypt_text(delivery.webhook.secret_encrypted), timestamp, body),
    }
    connection = _connection(target, settings.PAI_WEBHOOK_TIMEOUT)
    try:
        connection.request("POST", target.path, body=body, headers={"Host": _host_header(target), **headers})
        answer = connection.getresponse()
        answer.read(65536)
        return 200 <= answer.status < 300, str(answer.status)
    except (OSError, http.client.HTTPException) as exc:
        return False, f"no answer: {exc.__class__.__name__}: {exc}"[:200]
    finally:
        connection.close()


def _host_header(target: Target) -> str:
    default = 443 if target.scheme == "https" else 80
    host = f"[{target.host}]" if ":" in target.host else target.host
    return host if target.port == default else f"{host}:{target.port}"


class _PinnedHTTP(http.client.HTTPConnection):
    """Connects to the checked address, whatever the name resolves to now."""

    def __init__(self, target: Target, timeout: float) -> None:
        super().__init__(target.host, target.port, timeout=timeout)
        self.address = target.address

    def connect(self) -> None:
        self.sock = socket.create_connection((self.address, self.port), self.timeout)


class _PinnedHTTPS(http.client.HTTPSConnection):
    def __init__(self, target: Target, timeout: float) -> None:
        super().__init__(target.host, target.port, timeout=timeout, context=ssl.create_default_context())
        self.address = target.address

    def connect(self) -> None:
        raw = socket.create_connection((self.address, self.port), self.timeout)
        self.sock = self._context.wrap_socket(raw, server_hostname=self.host)  # type: ignore[attr-defined]


def _connection(target: Target, timeout: float) -> http.client.HTTPConnection:
    return (_PinnedHTTPS if target.scheme == "https" else _PinnedHTTP)(target, timeout)


def visible_hooks(user: Any, admin: bool) -> Any:
    """A user's hooks; an admin's page lists the deployment's too."""
    return Webhook.objects.filter(Q(owner=user) | Q(owner__isnull=True) if admin else Q(owner=user))
