"""Login is required everywhere except the login page, the language switch, the API and /metrics (token auth answers
401 itself) and static files. The API's docs pages are pages: a browser is sent to sign in (unless
PAI_API_DOCS_PUBLIC)."""

from collections.abc import Callable

from django.conf import settings
from django.contrib.auth.middleware import LoginRequiredMiddleware
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import render
from django.utils.translation import gettext as _

from catalogue import Message
from pai_portal.body_limits import TOO_LARGE_ENVIRON_KEY, body_limit, is_api
from web.api.answers import Answer, entry

EXEMPT_PREFIXES = ("/api/", "/rest-server/api/", "/static/", "/metrics")
DOCS_PAGES = ("/api/docs/", "/api/redoc/", "/rest-server/api/docs/", "/rest-server/api/redoc/")


class PortalLoginRequiredMiddleware(LoginRequiredMiddleware):
    def process_view(self, request, view_func, view_args, view_kwargs):
        if request.path.startswith(DOCS_PAGES) and not settings.PAI_API_DOCS_PUBLIC:
            # DRF marks its views login_not_required (it answers 401 itself): a page must redirect.
            return None if request.user.is_authenticated else self.handle_no_permission(request, view_func)
        if request.path.startswith(EXEMPT_PREFIXES):
            return None
        return super().process_view(request, view_func, view_args, view_kwargs)


class BodyTooLargeMiddleware:
    """413 for a body over its limit (pai_portal.body_limits), before anything reads it: Django's
    own check (in CsrfViewMiddleware's read of request.POST) answers a bare 400. The serving layer
    marks a body it stopped reading past the limit (chunked, no Content-Length) the same way."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        limit = body_limit(request.path)
        if request.META.get(TOO_LARGE_ENVIRON_KEY) or _declared_length(request) > limit:
            return _too_large(request, limit)
        return self.get_response(request)


def _declared_length(request: HttpRequest) -> int:
    try:
        return int(request.META.get("CONTENT_LENGTH") or 0)
    except ValueError:
        return 0  # Django reads no body then


def _too_large(request: HttpRequest, limit: int) -> HttpResponse:
    message = _("The request is too large; the limit is %(limit)d KB.") % {"limit": limit // 1024}
    if is_api(request.path):
        said = [entry(Message.of("api.body.over_limit", limit=limit // 1024))]
        return JsonResponse(Answer(413, "InvalidParametersError", message, said).body(), status=413)
    return render(request, "request_too_large.html", {"message": message}, status=413)
