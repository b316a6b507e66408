"""Typed readers for the environment variables settings.py is configured by.

A value that cannot mean what its name says (`PAI_DEBUG=ture`, `PAI_MAX_PARALLEL_STARTS=0`) stops
the process with ImproperlyConfigured naming the variable, instead of silently meaning a default.
"""

import os
from ipaddress import IPv4Network, IPv6Network, ip_network
from pathlib import Path
from typing import Any

from django.core.exceptions import ImproperlyConfigured

TRUE_WORDS = {"1", "true", "yes", "on"}
FALSE_WORDS = {"0", "false", "no", "off", ""}


def _raw(name: str) -> str | None:
    value = os.environ.get(name)
    return None if value is None else value.strip()


def env_str(name: str, default: str) -> str:
    value = _raw(name)
    return default if value is None or value == "" else value


def env_bool(name: str, default: bool = False) -> bool:
    value = _raw(name)
    if value is None:
        return default
    if value.lower() in TRUE_WORDS:
        return True
    if value.lower() in FALSE_WORDS:
        return False
    raise ImproperlyConfigured(f"{name}={value!r}: expected one of 1/true/yes/on or 0/false/no/off")


def _number(name: str, default: float, parse: type, what: str, minimum: float | None) -> Any:
    value = _raw(name)
    if value is None or value == "":
        return default
    try:
        number = parse(value)
    except ValueError:
        raise ImproperlyConfigured(f"{name}={value!r}: expected {what}") from None
    if minimum is not None and number < minimum:
        raise ImproperlyConfigured(f"{name}={value!r}: must be >= {minimum}")
    return number


def env_int(name: str, default: int, *, minimum: int | None = None) -> int:
    return int(_number(name, default, int, "a whole number", minimum))


def env_float(name: str, default: float, *, minimum: float | None = None) -> float:
    return float(_number(name, default, float, "a number", minimum))


def env_list(name: str, default: str) -> list[str]:
    """A comma-separated list; empty items are dropped."""
    return [item.strip() for item in env_str(name, default).split(",") if item.strip()]


def env_choices(name: str, default: str, choices: tuple[str, ...]) -> list[str]:
    """A comma-separated list of some of `choices`; anything else refuses to start."""
    values = env_list(name, default)
    unknown = [value for value in values if value not in choices]
    if unknown:
        raise ImproperlyConfigured(f"{name}={','.join(values)!r}: {unknown[0]!r} is not one of {', '.join(choices)}")
    return values


def env_networks(name: str) -> list[IPv4Network | IPv6Network]:
    """A comma-separated list of IP addresses or networks (`10.0.0.0/8,::1`)."""
    try:
        return [ip_network(item, strict=False) for item in env_list(name, "")]
    except ValueError as error:
        raise ImproperlyConfigured(f"{name}: {error}") from None


def env_path(name: str, default: Path) -> Path:
    return Path(env_str(name, str(default)))
