"""Per-user rate limits (rates in settings.REST_FRAMEWORK["DEFAULT_THROTTLE_RATES"], from env).
The login throttles (per address and per account) live in accounts.throttling, shared with the
login page; the submit page counts against SubmitThrottle too."""

from rest_framework.throttling import UserRateThrottle

from accounts.throttling import ClientAddressIdent, LoginAccountThrottle, LoginAddressThrottle, SteadyRateThrottle

__all__ = ["ListThrottle", "LoginAccountThrottle", "LoginAddressThrottle", "SubmitThrottle"]


class SubmitThrottle(ClientAddressIdent, SteadyRateThrottle, UserRateThrottle):
    scope = "submit"


class ListThrottle(ClientAddressIdent, SteadyRateThrottle, UserRateThrottle):
    scope = "list"
