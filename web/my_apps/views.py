"""The My apps page (/apps/): the live apps of the user's jobs across jobs (jobs/my_apps.py), each
with its idle time, its job's GPUs, Open (through the proxy's Open view) and its job's Stop (which
asks first); an admin's holds everyone's, with an owner column and a filter by owner."""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_GET

from accounts.permissions import is_admin
from jobs.interactive import may_open
from jobs.models import JobState
from jobs.my_apps import app_owners, live_apps


@require_GET
def app_list(request: HttpRequest) -> HttpResponse:
    admin = is_admin(request.user)
    owner = request.GET.get("owner", "") if admin else ""
    rows = [
        (live, live.ready and live.job.state == JobState.RUNNING and may_open(live.app, request.user))
        for live in live_apps(request.user, owner)
    ]
    context = {"rows": rows, "admin": admin, "owner": owner, "owners": app_owners(request.user) if admin else []}
    return render(request, "my_apps/list.html", context)
