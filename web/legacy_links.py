"""OpenPAI webportal addresses (`/job-detail.html?username=U&jobName=J`, ...) redirect to the portal's
pages: OpenPAI's SDK prints them and users keep them in notes and mails. The page names and
parameters are those of microsoft/pai src/webportal (config/webpack.common.js and the pages' code)."""

from __future__ import annotations

from collections.abc import Callable
from urllib.parse import urlencode

from django.http import HttpRequest, HttpResponseRedirect, QueryDict
from django.urls import path, reverse

JOB_STATES = {"waiting", "running", "stopping", "stopped", "succeeded", "failed", "unknown"}


def _job_page(params: QueryDict) -> str:
    """`username`/`userName` + `jobName`, or a jobName that is already `<user>~<job>`."""
    job = params.get("jobName", "")
    user = params.get("username") or params.get("userName") or params.get("user") or ""
    full_name = job if "~" in job else f"{user}~{job}"
    if not job or full_name.startswith("~"):
        return reverse("jobs:list")
    return reverse("jobs:detail", kwargs={"full_name": full_name})


def _job_list(params: QueryDict) -> str:
    status = params.get("status", "").lower()
    query = {
        "vc": params.get("vcName", ""),
        "state": status.upper() if status in JOB_STATES else "",
        "user": params.get("user", ""),
        "q": params.get("keyword", ""),
    }
    query_string = urlencode({key: value for key, value in query.items() if value})
    return reverse("jobs:list") + (f"?{query_string}" if query_string else "")


def _submit(params: QueryDict) -> str:
    """`?op=resubmit&user=U&jobName=J` (the webportal's Clone) opens the form filled with that job."""
    user, job = params.get("user", ""), params.get("jobName") or params.get("jobname") or ""
    if params.get("op") == "resubmit" and user and job:
        return reverse("jobs:submit") + "?" + urlencode({"clone": f"{user}~{job}"})
    return reverse("jobs:submit")


def _fixed(name: str) -> Callable[[QueryDict], str]:
    return lambda params: reverse(name)


def _redirect(target: Callable[[QueryDict], str]) -> Callable[[HttpRequest], HttpResponseRedirect]:
    def view(request: HttpRequest) -> HttpResponseRedirect:
        # Permanent: the old address will never serve anything else. Targets are the portal's own paths.
        return HttpResponseRedirect(target(request.GET), status=301)

    return view


PAGES: dict[str, Callable[[QueryDict], str]] = {
    "index.html": _fixed("jobs:list"),
    "home.html": _fixed("jobs:list"),
    "job-list.html": _job_list,
    "job-detail.html": _job_page,
    "task-attempt.html": _job_page,
    "job-event.html": _job_page,
    "submit.html": _submit,
    "submit_v1.html": _submit,
    "virtual-clusters.html": _fixed("scheduling:overview"),
    "dashboard.html": _fixed("scheduling:dashboard"),
    "cluster-view/hardware.html": _fixed("scheduling:overview"),
    "cluster-view/services.html": _fixed("scheduling:overview"),
    "user-profile.html": _fixed("profile"),
}

urlpatterns = [path(page, _redirect(target), name=f"openpai-{page}") for page, target in PAGES.items()]
