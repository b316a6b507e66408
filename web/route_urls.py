"""The addresses of routes without arguments (the top bar's links, the Help link), reversed once
per URL conf, script prefix, language and current app instead of on every page: the top bar's ~18
reversals were ~0.4-1 ms of every page's CPU. A changed ROOT_URLCONF (clear_url_caches) makes a
new resolver, and so a new key: nothing kept outlives the routes it was reversed from."""

from __future__ import annotations

from functools import lru_cache

from django.urls import URLResolver, get_resolver, get_script_prefix, get_urlconf, reverse
from django.utils.translation import get_language


def route_url(name: str, current_app: str | None = None) -> str:
    """reverse(name, current_app=current_app), kept."""
    return _reversed(get_resolver(get_urlconf()), get_script_prefix(), get_language(), current_app, name)


@lru_cache(maxsize=1024)
def _reversed(resolver: URLResolver, prefix: str, language: str | None, current_app: str | None, name: str) -> str:
    return reverse(name, current_app=current_app)  # (under the urlconf, prefix and language of the key)
