"""Thin views over jobs.job_templates. Starting a job from a template is the submit page's
(`/submit/?template=<id>&p.<parameter>=<value>`): the form filled, nothing submitted unasked."""

from __future__ import annotations

from typing import Any

from django.contrib import messages
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.utils.translation import gettext as _
from django.views.decorators.http import require_http_methods

from jobs import actions, job_templates
from jobs.models import Job, JobTemplate
from jobs.protocol import JobConfigError
from web.texts import translated


def template_or_404(request: HttpRequest, template_id: Any) -> JobTemplate:
    try:
        return job_templates.find(request.user, template_id)
    except JobTemplate.DoesNotExist as error:
        raise Http404(_("No such template.")) from error


def template_list(request: HttpRequest) -> HttpResponse:
    text = request.GET.get("q", "").strip()
    return render(
        request,
        "job_templates/list.html",
        {"templates": job_templates.search(request.user, text)[:200], "q": text},
    )


def template_detail(request: HttpRequest, template_id: int) -> HttpResponse:
    template = template_or_404(request, template_id)
    return render(
        request,
        "job_templates/detail.html",
        {
            "template": template,
            "parameters": job_templates.asked_parameters(template),
            "may_change": job_templates.may_change(request.user, template),
        },
    )


@require_http_methods(["GET", "POST"])
def template_new(request: HttpRequest) -> HttpResponse:
    """Save a config as a template: pasted, or a job's (`?from=<user>~<job>`, its config as submitted)."""
    values = {"name": "", "summary": "", "description": "", "visibility": "private", "config_text": ""}
    if request.method == "GET":
        if source := request.GET.get("from"):
            try:
                job = actions.get_job_for(request.user, source)
            except Job.DoesNotExist as error:
                raise Http404(_("No such job.")) from error
            values.update(name=job.name, config_text=job.config_text)
        return render(request, "job_templates/new.html", {"values": values, "errors": {}})
    values.update({key: request.POST.get(key, "") for key in values})
    try:
        template = job_templates.save(
            request.user,
            name=values["name"],
            config_text=values["config_text"],
            summary=values["summary"],
            description=values["description"],
            visibility=values["visibility"],
        )
    except JobConfigError as error:
        errors: dict[str, list[str]] = {}
        for field, message in error.errors:
            if field.startswith("config."):  # (the config's own path, shown with its message)
                errors.setdefault("config", []).append(f"{field.removeprefix('config.')}: {translated(message)}")
            else:
                errors.setdefault(field, []).append(translated(message))
        return render(request, "job_templates/new.html", {"values": values, "errors": errors}, status=400)
    messages.success(request, _("Template %(name)s saved.") % {"name": template.name})
    return redirect("templates:detail", template.pk)


@require_http_methods(["GET", "POST"])
def template_delete(request: HttpRequest, template_id: int) -> HttpResponse:
    template = template_or_404(request, template_id)
    if not job_templates.may_change(request.user, template):
        raise Http404(_("No such template."))
    if request.method == "GET":
        return render(request, "job_templates/delete.html", {"template": template})
    template.delete()
    messages.success(request, _("Template %(name)s deleted.") % {"name": template.name})
    return redirect("templates:list")
