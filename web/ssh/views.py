"""SSH pages: the job's private key (owner and admins only), the per-task SSH info, the terminal.

Someone else's job answers 404, never 403: it does not exist for them.
"""

from __future__ import annotations

from django.http import Http404, HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import render
from django.urls import reverse
from django.views.decorators.http import require_GET

from jobs.ssh.info import ssh_info
from jobs.ssh.keys import job_private_key, key_filename
from web.job_page import job_or_404


@require_GET
def download_key(request: HttpRequest, full_name: str) -> HttpResponse:
    job = job_or_404(request, full_name)
    private_key = job_private_key(job)
    if not private_key:
        raise Http404("This job has no SSH key.")
    response = HttpResponse(private_key, content_type="application/x-pem-file")
    response["Content-Disposition"] = f'attachment; filename="{key_filename(job)}"'
    response["Cache-Control"] = "no-store"
    return response


@require_GET
def ssh_info_json(request: HttpRequest, full_name: str) -> JsonResponse:
    job = job_or_404(request, full_name)
    return JsonResponse(
        {
            "keyUrl": reverse("jobs_ssh:key", args=[job.full_name]),
            "keyFileName": key_filename(job),
            "tasks": ssh_info(job),
        }
    )


@require_GET
def terminal(request: HttpRequest, full_name: str, role: str, index: int) -> HttpResponse:
    job = job_or_404(request, full_name)
    if not job.tasks.filter(role=role, index=index).exists():
        raise Http404("No such task.")
    context = {
        "job": job,
        "role": role,
        "index": index,
        "socket_path": f"/ws/jobs/{job.full_name}/terminal/{role}/{index}/",
    }
    return render(request, "jobs/terminal.html", context)
