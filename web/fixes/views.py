"""The job page's "Resubmit with N MB" button."""

from __future__ import annotations

from django.contrib import messages
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect
from django.utils.translation import gettext as _
from django.views.decorators.http import require_POST

from jobs import actions
from jobs.models import Job
from jobs.protocol import JobConfigError
from web.fixes import resubmit_config


@require_POST
def resubmit_with_memory(request: HttpRequest, full_name: str) -> HttpResponse:
    """Submit the OOM-killed job again with the memory its fix offers (worked out again here, so a
    stale page cannot ask for more than the VC allows)."""
    try:
        job = actions.get_job_for(request.user, full_name)
    except Job.DoesNotExist as error:
        raise Http404(_("No such job.")) from error
    offer = resubmit_config(job)
    if offer is None:
        messages.error(request, _("This job has no memory fix to resubmit with."))
        return redirect("jobs:detail", full_name)
    text, fix = offer
    try:
        new_job = actions.submit_job(request.user, text)
    except (JobConfigError, actions.JobNameConflict) as error:
        messages.error(request, _("Could not resubmit: %(error)s") % {"error": error})
        return redirect("jobs:detail", full_name)
    messages.success(request, _("Resubmitted with %(mb)s MB for %(role)s.") % {"mb": fix.memory_mb, "role": fix.role})
    return redirect("jobs:detail", new_job.full_name)
