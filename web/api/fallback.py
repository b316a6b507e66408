"""What answers a path under /api/ that no route names, and a request Django refuses before any
route (handler400: a host not allowed, a header or path it cannot read).

OpenPAI's REST server is an Express app, whose routes match with or without a trailing slash, so its
clients send either (`POST /api/v2/users/`, `GET /api/v2/users/alice/`). Such a path is answered
by the route without the slash; anything else is OpenPAI's 404 NoApiError, never an HTML page.
"""

from __future__ import annotations

from typing import Any

from django.http import HttpRequest, HttpResponse, JsonResponse
from django.urls import Resolver404, resolve
from django.views.decorators.csrf import csrf_exempt

from catalogue import Message
from web.api.answers import answer
from web.api.errors import API_ALIAS_PREFIX, is_v1_path
from web.error_pages import bad_request_page


@csrf_exempt  # the route it hands over to is a DRF view, which checks CSRF for session users itself
def no_such_route(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
    if request.path_info.endswith("/"):
        try:
            match = resolve(request.path_info.rstrip("/"))
        except Resolver404:
            match = None
        if match is not None and match.func is not no_such_route:
            request.resolver_match = match
            return match.func(request, *match.args, **match.kwargs)
    refused = answer(404, "NoApiError", Message.of("api.no_such_route", method=request.method or "", path=request.path))
    return JsonResponse(refused.body(), status=refused.status)


def bad_request(request: HttpRequest, exception: Exception | None = None) -> HttpResponse:
    """Django's 400 (a SuspiciousOperation before any view: a host not allowed, a path or header
    it cannot read): `{code, message, errors, field}` under /api/, the portal's 400 page elsewhere."""
    path = request.path_info or ""
    if not path.removeprefix(API_ALIAS_PREFIX).startswith("/api/"):
        return bad_request_page(request)
    code = "InvalidParametersError" if is_v1_path(path) else "InvalidProtocolError"
    said = str(exception or "")
    refused = answer(
        400, code, Message.of("api.bad_request_said", said=said) if said else Message.of("api.unreadable_request")
    )
    return JsonResponse(refused.body(), status=refused.status)
