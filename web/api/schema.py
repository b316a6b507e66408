"""OpenAPI schema hooks and view (drf-spectacular)."""

from __future__ import annotations

from typing import Any

from drf_spectacular.views import SpectacularAPIView
from rest_framework.renderers import JSONRenderer
from rest_framework.request import Request
from rest_framework.response import Response

from web.api.errors import API_ALIAS_PREFIX


class SchemaView(SpectacularAPIView):
    """The schema (YAML, or JSON with ?format=json); its errors `{code, message}` as JSON, as every
    API error is, never YAML."""

    def finalize_response(self, request: Request, response: Any, *args: Any, **kwargs: Any) -> Any:
        response = super().finalize_response(request, response, *args, **kwargs)
        if isinstance(response, Response) and response.status_code >= 400:
            response.accepted_renderer = JSONRenderer()
            response.accepted_media_type = JSONRenderer.media_type
        return response


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
