"""What operators read: Prometheus metrics and the cluster dashboard."""

from __future__ import annotations

import hmac
import time

from django.conf import settings
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_GET
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

from accounts.permissions import is_admin
from jobs import actions
from web.cluster import dashboard as dashboard_data
from web.cluster.metrics import registry


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


@require_GET
def dashboard(request: HttpRequest) -> HttpResponse:
    listed = actions.listed_jobs(request.user)
    idle = dashboard_data.idle_gpus(time.time())
    shown = set(listed.filter(id__in=[row.task.job_id for row in idle]).values_list("id", flat=True))
    context = {
        "nodes": dashboard_data.node_rows(),
        "waiting": dashboard_data.longest_waiting(listed),  # .jobs and .never_fit
        "idle": [row for row in idle if row.task.job_id in shown],
        "idle_percent": dashboard_data.IDLE_GPU_PERCENT,
    }
    return render(request, "scheduling/dashboard.html", context)


@require_GET
def dashboard_history(request: HttpRequest) -> JsonResponse:
    """The dashboard charts' data: each VC's GPUs and jobs over the last day."""
    return JsonResponse(dashboard_data.vc_history(dashboard_data.history_window()))


@require_GET
def after_login(request: HttpRequest) -> HttpResponse:
    """Where signing in lands (LOGIN_REDIRECT_URL): admins on the dashboard, users on their jobs."""
    return redirect("scheduling:dashboard" if is_admin(request.user) else "jobs:list")
