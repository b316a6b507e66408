"""Per-user rate limits (rates in settings.REST_FRAMEWORK["DEFAULT_THROTTLE_RATES"], from env)."""

from rest_framework.throttling import AnonRateThrottle, UserRateThrottle


class SubmitThrottle(UserRateThrottle):
    scope = "submit"


class ListThrottle(UserRateThrottle):
    scope = "list"


class LoginThrottle(AnonRateThrottle):
    """Per client address: slows password guessing."""

    scope = "login"
