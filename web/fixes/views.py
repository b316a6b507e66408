"""The job page's resubmit with a fix: "Resubmit with N MB", "... MB of /dev/shm", "... batch_size = N".
GET shows what the fix changes in the config (a diff) and asks; POST submits."""

from __future__ import annotations

import difflib

from django.contrib import messages
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.utils.translation import gettext as _
from django.views.decorators.http import require_http_methods

from jobs import actions
from jobs.models import Job
from jobs.protocol import JobConfigError
from web.fixes import resubmit_config, resubmit_label
from web.submit_errors import said
from web.texts import translated


@require_http_methods(["GET", "POST"])
def resubmit_with_fix(request: HttpRequest, full_name: str) -> HttpResponse:
    """Submit the failed job again with the one field its fix changes (worked out again here, so a
    stale page cannot ask for more than the VC allows); GET shows the change and asks first."""
    try:
        job = actions.get_job_for(request.user, full_name)
    except Job.DoesNotExist as error:
        raise Http404(_("No such job.")) from error
    offer = resubmit_config(job)
    if offer is None:
        messages.error(request, _("This job has no fix to resubmit with."))
        return redirect("jobs:detail", full_name)
    text, fix = offer
    if request.method == "GET":
        context = {"job": job, "label": resubmit_label(fix), "diff": config_diff(job.config_text, text)}
        return render(request, "jobs/resubmit_fix_confirm.html", context)
    try:
        new_job = actions.submit_job(request.user, text)
    except JobConfigError as error:
        messages.error(request, _("Could not resubmit: %(error)s") % {"error": "; ".join(said(error.errors))})
        return redirect("jobs:detail", full_name)
    except actions.JobNameConflict as error:
        messages.error(request, _("Could not resubmit: %(error)s") % {"error": translated(error.message)})
        return redirect("jobs:detail", full_name)
    if fix.memory_mb:
        messages.success(
            request, _("Resubmitted with %(mb)s MB for %(role)s.") % {"mb": fix.memory_mb, "role": fix.role}
        )
    else:
        messages.success(request, _("Resubmitted: %(change)s.") % {"change": resubmit_label(fix)})
    return redirect(new_job)


def config_diff(before: str, after: str) -> list[tuple[str, str]]:
    """The changed lines with a little context, as (kind, line): kind is "-", "+", " " or "@"."""
    lines = difflib.unified_diff(before.splitlines(), after.splitlines(), lineterm="", n=2)
    return [(line[:1] if line[:1] in "-+ " else "@", line[1:]) for line in list(lines)[2:]]
