"""The VC pages, for admins: the VCs with their shares; a VC's running and waiting jobs, its usage
(the cluster page's quota figures, scheduling.quota; the Usage page's hours, scheduling.usage_report)
and who may use it; its form, new and edit; its removal, asked first. Thin: clusters.vc_admin checks
(the Django admin's form) and saves."""

from __future__ import annotations

from django.contrib import messages
from django.core.exceptions import PermissionDenied
from django.db.models import Count, Q
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import render
from django.urls import reverse
from django.utils.translation import gettext as _
from django.views.decorators.http import require_GET, require_http_methods

from accounts.permissions import is_admin
from clusters import vc_admin
from clusters.models import Node, VirtualCluster
from clusters.shares import over_100_warning, share_warnings, total_share
from jobs.models import Job, JobState
from scheduling.quota import cluster_usage
from scheduling.usage_report import usage_report
from web.cluster.views import VcRow
from web.usage.views import usage_range
from web.vcs.forms import VcPageForm, edit_form, share_room

LIVE_STATES = (JobState.RUNNING, JobState.STOPPING, JobState.WAITING)
JOBS_SHOWN = 50


def _admin_only(request: HttpRequest) -> None:
    if not is_admin(request.user):
        raise PermissionDenied(_("The VC pages are for cluster admins."))


def _vc(name: str) -> VirtualCluster:
    vc = VirtualCluster.objects.prefetch_related("allowed_users", "allowed_groups", "crit_users").filter(name=name)
    found = vc.first()
    if found is None:
        raise Http404(_("No such virtual cluster."))
    return found


def _warnings() -> list[str]:
    return [warning for warning in [over_100_warning(), *share_warnings().values()] if warning]


@require_GET
def vc_list(request: HttpRequest) -> HttpResponse:
    _admin_only(request)
    vcs = VirtualCluster.objects.prefetch_related("allowed_users", "allowed_groups").annotate(
        live_jobs=Count("jobs", filter=Q(jobs__state__in=LIVE_STATES))
    )
    context = {"vcs": vcs, "total": f"{total_share().normalize():f}", "warnings": _warnings()}
    return render(request, "vcs/list.html", context)


@require_GET
def vc_detail(request: HttpRequest, name: str) -> HttpResponse:
    _admin_only(request)
    vc = _vc(name)
    state = cluster_usage(list(Node.objects.all())).vcs.get(vc.name)
    jobs = Job.objects.filter(virtual_cluster=vc, state__in=LIVE_STATES).select_related("owner")
    counts = dict(jobs.order_by().values_list("state").annotate(n=Count("id")))
    since, until, _errors = usage_range({})
    hours = next((row for row in usage_report(request.user, True, since, until).vcs if row["name"] == vc.name), None)
    row = None
    if state is not None:
        row = VcRow(vc, state.limit, state.used, lends=state.lends, lent=state.lent, borrowed=state.borrowed)
    context = {
        "vc": vc,
        "row": row,
        "running": counts.get(JobState.RUNNING, 0) + counts.get(JobState.STOPPING, 0),
        "waiting": counts.get(JobState.WAITING, 0),
        "jobs": jobs.order_by("state", "created_at")[:JOBS_SHOWN],
        "hours": hours,
        "since": since,
        "until": until,
        "open_to_everyone": not vc.allowed_users.all() and not vc.allowed_groups.all(),
        "groups": vc.allowed_groups.annotate(members=Count("user")).order_by("name"),
    }
    return render(request, "vcs/detail.html", context)


def _form_page(request: HttpRequest, vc: VirtualCluster | None) -> HttpResponse:
    """The VC's form, a new one's (vc None) or an edit without its name; saved, the VC's page."""
    data = request.POST if request.method == "POST" else None
    form = VcPageForm(data) if vc is None else edit_form(data, vc)
    if request.method == "POST" and form.is_valid():
        saved = vc_admin.save_vc(request.user, form)
        messages.success(request, _("VC %(vc)s was created.") % {"vc": saved.name} if vc is None else _("Saved."))
        return HttpResponseRedirect(reverse("vcs:detail", args=[saved.name]))
    context = {"form": form, "vc": vc, "room": share_room(vc_admin.other_shares(vc))}
    return render(request, "vcs/form.html", context, status=400 if form.errors else 200)


@require_http_methods(["GET", "POST"])
def vc_new(request: HttpRequest) -> HttpResponse:
    _admin_only(request)
    return _form_page(request, None)


@require_http_methods(["GET", "POST"])
def vc_edit(request: HttpRequest, name: str) -> HttpResponse:
    _admin_only(request)
    return _form_page(request, _vc(name))


@require_http_methods(["GET", "POST"])
def vc_remove(request: HttpRequest, name: str) -> HttpResponse:
    _admin_only(request)
    vc = _vc(name)
    if request.method == "POST":
        try:
            vc_admin.remove_vc(request.user, vc)
        except vc_admin.VcProblem as refused:
            return _remove_page(request, vc, refused.message, status=409)
        messages.success(request, _("VC %(vc)s was removed.") % {"vc": vc.name})
        return HttpResponseRedirect(reverse("vcs:list"))
    return _remove_page(request, vc, vc_admin.removal_problem(vc))


def _remove_page(request: HttpRequest, vc: VirtualCluster, problem: str, status: int = 200) -> HttpResponse:
    """The question, or why the VC stays (said before the click, as it would be after it)."""
    live = vc.jobs.filter(state__in=LIVE_STATES).count()
    return render(request, "vcs/remove.html", {"vc": vc, "problem": problem, "live": live}, status=status)
