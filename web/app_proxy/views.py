"""The portal's side of opening an app: a signed-in user who may open it is sent to the app's own
origin with a one-time ticket (web/app_proxy/passes.py); anyone else is told why not."""

from __future__ import annotations

from django.http import Http404, HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import render
from django.views.decorators.http import require_GET

from jobs.interactive import app_origin, may_open
from jobs.models import InteractiveApp
from web.app_proxy.passes import safe_next, sign_in_url


@require_GET
def open_app(request: HttpRequest, slug: str) -> HttpResponse:
    app = InteractiveApp.objects.select_related("job", "job__owner").filter(slug=slug).first()
    if app is None:
        raise Http404("No such app.")
    if not may_open(app, request.user):
        return render(request, "apps/refused.html", {"kind": app.kind}, status=403)
    origin = app_origin(app, request.scheme or "http", request.get_port())
    next_path = safe_next(request.GET.get("next", "/"))
    return HttpResponseRedirect(sign_in_url(origin, app.slug, int(request.user.pk or 0), next_path))
