"""The My apps page (/apps/): the live apps of the user's jobs across jobs (jobs/my_apps.py), each
with its idle time, its job's GPUs, Open (through the proxy's Open view), its job's Stop (which
asks first) and, for its owner, who else may open it (one of the owner's groups); the apps others
shared with a group of the user's, saying whose; an admin's holds everyone's, with an owner column
and a filter by owner."""

from __future__ import annotations

from django.contrib import messages
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.utils.translation import gettext as _
from django.views.decorators.http import require_GET, require_POST

from accounts.permissions import is_admin
from jobs import interactive
from jobs.group_shares import groups_of
from jobs.models import InteractiveApp, JobState
from jobs.my_apps import app_owners, live_apps
from jobs.protocol import JobConfigError
from web.texts import translated


@require_GET
def app_list(request: HttpRequest) -> HttpResponse:
    admin = is_admin(request.user)
    owner = request.GET.get("owner", "") if admin else ""
    rows = [
        (live, live.ready and live.job.state == JobState.RUNNING and interactive.may_open(live.app, request.user))
        for live in live_apps(request.user, owner)
    ]
    context = {
        "rows": rows,
        "admin": admin,
        "owner": owner,
        "owners": app_owners(request.user) if admin else [],
        "groups": list(groups_of(request.user)),
    }
    return render(request, "my_apps/list.html", context)


@require_POST
def app_share(request: HttpRequest, slug: str) -> HttpResponse:
    """The app's owner shares it with one of their groups (`group`; empty: with no group)."""
    app = InteractiveApp.objects.select_related("job").filter(slug=slug, job__owner_id=request.user.pk).first()
    if app is None:
        raise Http404(_("No such app."))
    try:
        interactive.share(app, request.user, request.POST.get("group", ""))
    except JobConfigError as error:
        messages.error(request, translated(error.errors[0][1]))
        return redirect("my_apps:list")
    if app.shared_with_group is None:
        messages.success(request, _("Only you open %(job)s's app now.") % {"job": app.job.name})
    else:
        messages.success(
            request,
            _("Group %(group)s's members may open %(job)s's app now.")
            % {"group": app.shared_with_group.name, "job": app.job.name},
        )
    return redirect("my_apps:list")
