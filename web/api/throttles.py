"""Per-user rate limits (rates in settings.REST_FRAMEWORK["DEFAULT_THROTTLE_RATES"], from env).
The login throttles (per address and per account) live in accounts.throttling, shared with the
login page; the submit page counts against SubmitThrottle too.

Submits and lists keep their counters in the `throttles` cache (settings.CACHES: Redis, else the
server process's memory): they are asked on every API request, and the shared database cache
cost each one a write transaction."""

from typing import Any, cast

from django.core.cache import BaseCache, caches
from django.utils.connection import ConnectionProxy
from rest_framework.throttling import UserRateThrottle

from accounts.throttling import ClientAddressIdent, LoginAccountThrottle, LoginAddressThrottle, SteadyRateThrottle

# Each thread's own client, as django.core.cache.cache gives.
THROTTLES_CACHE = cast(BaseCache, ConnectionProxy(caches, "throttles"))

__all__ = ["ListThrottle", "LoginAccountThrottle", "LoginAddressThrottle", "SubmitThrottle", "charge_list_rows"]


class SubmitThrottle(ClientAddressIdent, SteadyRateThrottle, UserRateThrottle):
    scope = "submit"
    cache = THROTTLES_CACHE


class ListThrottle(ClientAddressIdent, SteadyRateThrottle, UserRateThrottle):
    scope = "list"
    cache = THROTTLES_CACHE


# A list answer of this many rows counts as one request; each further such share as one more, so
# one user paging through 50,000-row answers inside the list rate cannot hold the workers for all.
ROWS_PER_LIST_REQUEST = 1000


def charge_list_rows(request: Any, rows: int) -> None:
    ListThrottle().charge(request, None, rows // ROWS_PER_LIST_REQUEST)
