"""Rate limits on signing in, per client address and per account, shared by the login page and
the API login (DRF throttles: the same counters in the same cache).

The client address is the connection's, never a header's, unless the connection comes from a
proxy listed in PAI_TRUSTED_PROXIES: then the nearest X-Forwarded-For hop that is not a trusted
proxy (what the outermost trusted proxy saw) is the client. An untrusted client may write any
X-Forwarded-For it likes, so it must not choose its own throttle bucket.
"""

from __future__ import annotations

import hashlib
import ipaddress
from collections.abc import Iterable
from typing import Any, cast

from django.conf import settings
from django.contrib.auth import get_user_model
from rest_framework.throttling import BaseThrottle, SimpleRateThrottle


class SteadyRateThrottle(SimpleRateThrottle):
    """DRF's rate ("N/min"), kept as one number per key instead of a list of every request's time
    (GCRA: the time the next request is due). N requests may come at once, then one per
    duration/N, as many as DRF's sliding window lets through over time; but the cache entry stays a
    float, where DRF's list grew with the rate and was pickled and compressed on every request."""

    retry_after = 0.0
    num_requests: int  # set by SimpleRateThrottle from the rate
    duration: int

    def allow_request(self, request: Any, view: Any) -> bool:
        if self.rate is None:
            return True
        self.key = self.get_cache_key(request, view)
        if self.key is None:
            return True
        interval = self.duration / self.num_requests
        now = self.timer()
        due = max(float(self.cache.get(self.key, now)), now)
        self.retry_after = due + interval - self.duration - now
        if self.retry_after > 0:
            return False
        self.cache.set(self.key, due + interval, self.duration)
        return True

    def wait(self) -> float | None:
        return max(self.retry_after, 0.0)

    def charge(self, request: Any, view: Any, requests: int) -> None:
        """Count a request that did the work of several (a big page) as that many more, after it
        was let through: the client's next ones wait until the rate has paid for it."""
        if self.rate is None or requests <= 0:
            return
        key = self.get_cache_key(request, view)
        if key is None:
            return
        now = self.timer()
        due = max(float(self.cache.get(key, now)), now)
        self.cache.set(key, due + requests * self.duration / self.num_requests, self.duration * (1 + requests))


def client_address(request: Any) -> str:
    remote = request.META.get("REMOTE_ADDR", "")
    if not _is_trusted_proxy(remote):
        return str(remote)
    hops = [hop.strip() for hop in request.META.get("HTTP_X_FORWARDED_FOR", "").split(",") if hop.strip()]
    for hop in reversed(hops):
        if not _is_trusted_proxy(hop):
            return hop
    return hops[0] if hops else str(remote)


def _is_trusted_proxy(address: str) -> bool:
    try:
        ip = ipaddress.ip_address(address)
    except ValueError:
        return False
    return any(ip in network for network in settings.PAI_TRUSTED_PROXIES)


class ClientAddressIdent:
    """DRF keys anonymous throttles by X-Forwarded-For unless NUM_PROXIES says otherwise: key
    them by the client address above instead."""

    def get_ident(self, request: Any) -> str:
        return client_address(request)


class LoginAddressThrottle(ClientAddressIdent, SteadyRateThrottle):
    scope = "login"

    def get_cache_key(self, request: Any, view: Any) -> str:
        return self.cache_format % {"scope": self.scope, "ident": self.get_ident(request)}


def sign_in_name(raw: str) -> str:
    """The user name as the authentication backend looks it up: the login form strips it and
    normalizes it (NFKC, `User.normalize_username`), the API does the same through this function.
    Case is kept: ModelBackend's lookup is an exact, case-sensitive match, so `Dave` is another
    account (or none), not another spelling of `dave`."""
    return get_user_model().normalize_username(raw.strip())


class LoginAccountThrottle(SteadyRateThrottle):
    """Guesses at one account's password, from any number of addresses: keyed on the name the
    backend will see, so `dave ` or a compatibility spelling counts against `dave`."""

    scope = "login_account"

    def get_cache_key(self, request: Any, view: Any) -> str | None:
        data: Any = getattr(request, "data", None)  # DRF's parsed body, or Django's POST
        username = (data if hasattr(data, "get") else request.POST).get("username")
        name = sign_in_name(username) if isinstance(username, str) else ""
        if not name:
            return None  # nothing to guess at: the address throttle still counts it
        digest = hashlib.sha256(name.encode("utf-8", "surrogatepass")).hexdigest()[:32]
        return self.cache_format % {"scope": self.scope, "ident": digest}


LOGIN_THROTTLES = (LoginAddressThrottle, LoginAccountThrottle)


def throttle_wait(throttle_classes: Iterable[type[BaseThrottle]], request: Any) -> float | None:
    """For pages: seconds to wait before this request may be made, or None (it is then counted)."""
    for throttle_class in throttle_classes:
        throttle = throttle_class()
        if not throttle.allow_request(request, view=cast(Any, None)):  # these throttles need no view
            return throttle.wait() or 1.0
    return None


def login_wait(request: Any) -> float | None:
    return throttle_wait(LOGIN_THROTTLES, request)
