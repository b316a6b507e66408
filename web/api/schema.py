"""OpenAPI schema hooks and view (drf-spectacular)."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.core.signals import setting_changed
from django.dispatch import receiver
from django.utils.translation import get_language
from drf_spectacular.views import SpectacularAPIView
from rest_framework.renderers import BaseRenderer, JSONRenderer
from rest_framework.request import Request
from rest_framework.response import Response

from web.api.errors import API_ALIAS_PREFIX

# The schemas made, by (language, API version, URL conf), and each one's text, by (renderer, media
# type, the schema's key): made once and kept until a setting changes.
SchemaKey = tuple[str | None, str | None, str]
SCHEMAS: dict[SchemaKey, dict[str, Any]] = {}
TEXTS: dict[tuple[type, str | None, SchemaKey], bytes] = {}


@receiver(setting_changed)
def forget_schemas(**kwargs: Any) -> None:
    """The schema is made from the settings (the routes, SPECTACULAR_SETTINGS, the languages)."""
    SCHEMAS.clear()
    TEXTS.clear()


class RenderedOnce(BaseRenderer):
    """A schema renderer that renders a kept schema once per media type (each kept schema is one
    language's)."""

    def render(self, data: Any, accepted_media_type: str | None = None, renderer_context: Any = None) -> Any:
        key = getattr((renderer_context or {}).get("view"), "schema_key", None)
        if key is None or data is not SCHEMAS.get(key):  # (an error's answer)
            return super().render(data, accepted_media_type, renderer_context)
        text_key = (type(self), accepted_media_type, key)  # (the key holds the language)
        if text_key not in TEXTS:
            TEXTS[text_key] = super().render(data, accepted_media_type, renderer_context)
        return TEXTS[text_key]


def rendered_once(renderer: type[BaseRenderer]) -> type[BaseRenderer]:
    return type(renderer.__name__, (RenderedOnce, renderer), {})


class SchemaView(SpectacularAPIView):
    """The schema (YAML, or JSON with ?format=json); its errors `{code, message}` as JSON, as every
    API error is, never YAML. It is made once per language and API version and each format's text
    rendered once: the same for every reader (SERVE_PUBLIC: no permission filters it), it took
    ~0.16 s of CPU to make and write as YAML, on every load of the docs pages."""

    renderer_classes = [rendered_once(renderer) for renderer in SpectacularAPIView.renderer_classes]

    def _get_schema_response(self, request: Request) -> Response:
        version = self.api_version or request.version or self._get_version_parameter(request)
        # (the URL conf too: pytest-django's `urls` marker sets it without a setting_changed)
        self.schema_key = (get_language(), version, settings.ROOT_URLCONF)
        if self.schema_key not in SCHEMAS:
            generator = self.generator_class(urlconf=self.urlconf, api_version=version, patterns=self.patterns)
            SCHEMAS[self.schema_key] = generator.get_schema(request=request, public=self.serve_public)
        disposition = f'inline; filename="{self._get_filename(request, version)}"'
        return Response(data=SCHEMAS[self.schema_key], headers={"Content-Disposition": disposition})

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
