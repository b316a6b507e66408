"""OpenAPI schema hooks (drf-spectacular)."""

from __future__ import annotations

from typing import Any

from web.api.errors import API_ALIAS_PREFIX


def without_alias_routes(endpoints: list[tuple[str, Any, str, Any]], **kwargs: Any) -> list[tuple[str, Any, str, Any]]:
    """The /rest-server/api/ routes are the /api/ ones again: the schema lists them once and names
    both bases in `servers` (settings.SPECTACULAR_SETTINGS). So are OpenPAI's singular /api/v2/group
    routes: the schema lists the plural ones."""
    return [
        endpoint
        for endpoint in endpoints
        if not endpoint[0].startswith(API_ALIAS_PREFIX + "/")
        and not (endpoint[0] == "/api/v2/group" or endpoint[0].startswith("/api/v2/group/"))
    ]
