"""What operators and the dashboard read: Prometheus metrics."""

from __future__ import annotations

import hmac

from django.conf import settings
from django.http import HttpRequest, HttpResponse
from django.views.decorators.http import require_GET
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

from accounts.permissions import is_admin
from scheduling.metrics import registry


def _may_scrape(request: HttpRequest) -> bool:
    if settings.PAI_METRICS_PUBLIC:
        return True
    token = settings.PAI_METRICS_TOKEN
    sent = request.headers.get("Authorization", "").removeprefix("Bearer ").strip()
    if token and sent and hmac.compare_digest(sent.encode(), token.encode()):
        return True
    return request.user.is_authenticated and is_admin(request.user)


@require_GET
def metrics(request: HttpRequest) -> HttpResponse:
    if not _may_scrape(request):
        response = HttpResponse("metrics need `Authorization: Bearer <PAI_METRICS_TOKEN>`\n", status=401)
        response["WWW-Authenticate"] = "Bearer"
        return response
    return HttpResponse(generate_latest(registry()), content_type=CONTENT_TYPE_LATEST)
