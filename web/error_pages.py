"""The portal's error pages (400, 403, 404, 500): in its frame (top bar, language switch), in the
reader's language, each saying why. Django's own handlers render 403.html and 404.html with the
request; its 400 and 500 render without one (no frame, no language), hence these two, and its
CSRF failure page, English only, hence csrf_failure (settings.CSRF_FAILURE_VIEW)."""

from __future__ import annotations

import logging

from django.http import HttpRequest, HttpResponse, HttpResponseServerError, JsonResponse
from django.shortcuts import render
from django.utils.translation import gettext as _

from catalogue import Message
from web.api.answers import Answer, entry
from web.api.errors import API_ALIAS_PREFIX

log = logging.getLogger(__name__)


def bad_request_page(request: HttpRequest) -> HttpResponse:
    return render(request, "400.html", status=400)


def csrf_failure(request: HttpRequest, reason: str = "") -> HttpResponse:
    """A form sent with a missing or stale security token (a page open across a sign-in, say)."""
    why = _("The form was sent without this session's security token: reload the page and send it again.")
    return render(request, "403.html", {"exception": why}, status=403)


def server_error(request: HttpRequest) -> HttpResponse:
    """The portal's 500: `{code, message, errors, field}` under /api/ (as OpenPAI's UnknownError; the
    message in the reader's language, its code `api.server_failed`), else the page;
    should the page itself fail (the database down, say), a plain one."""
    if request.path_info.removeprefix(API_ALIAS_PREFIX).startswith("/api/"):
        message = _("The portal failed on this request; the error is in its log.")
        return JsonResponse(
            Answer(500, "UnknownError", message, [entry(Message.of("api.server_failed"))]).body(), status=500
        )
    try:
        return render(request, "500.html", status=500)
    except Exception:  # the frame needs what may have failed (database, sessions): say it plainly
        log.exception("the 500 page itself failed")
        return HttpResponseServerError("<h1>Server error (500)</h1>", content_type="text/html")
