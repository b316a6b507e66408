"""Per-user rate limits (rates in settings.REST_FRAMEWORK["DEFAULT_THROTTLE_RATES"], from env).
The login throttles (per address and per account) live in accounts.throttling, shared with the
login page; the submit page counts against SubmitThrottle too."""

from typing import Any

from rest_framework.throttling import UserRateThrottle

from accounts.throttling import ClientAddressIdent, LoginAccountThrottle, LoginAddressThrottle, SteadyRateThrottle

__all__ = ["ListThrottle", "LoginAccountThrottle", "LoginAddressThrottle", "SubmitThrottle", "charge_list_rows"]


class SubmitThrottle(ClientAddressIdent, SteadyRateThrottle, UserRateThrottle):
    scope = "submit"


class ListThrottle(ClientAddressIdent, SteadyRateThrottle, UserRateThrottle):
    scope = "list"


# A list answer of this many rows counts as one request; each further such share as one more, so
# one user paging through 50,000-row answers inside the list rate cannot hold the workers for all.
ROWS_PER_LIST_REQUEST = 1000


def charge_list_rows(request: Any, rows: int) -> None:
    ListThrottle().charge(request, None, rows // ROWS_PER_LIST_REQUEST)
