"""Thin views over jobs.job_templates: list, one template, new, edit (its owner: also who may use
it, one of the owner's groups among the choices), delete. Starting a job from a template is the submit page's
(`/submit/?template=<id>&p.<parameter>=<value>`): the form filled, nothing submitted unasked."""

from __future__ import annotations

from typing import Any

from django.contrib import messages
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.utils.translation import gettext as _
from django.views.decorators.http import require_http_methods

from jobs import actions, job_templates
from jobs.group_shares import groups_of
from jobs.models import Job, JobTemplate
from jobs.protocol import JobConfigError
from web.texts import translated


def template_or_404(request: HttpRequest, template_id: Any) -> JobTemplate:
    try:
        return job_templates.find(request.user, template_id)
    except JobTemplate.DoesNotExist as error:
        raise Http404(_("No such template.")) from error


def own_template_or_404(request: HttpRequest, template_id: int) -> JobTemplate:
    """A template the user may change (theirs, or any for an admin); to anyone else there is none."""
    template = template_or_404(request, template_id)
    if not job_templates.may_change(request.user, template):
        raise Http404(_("No such template."))
    return template


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


GROUP_CHOICE = "group:"  # the "Who may use it" value of a group: `group:<name>`


def form_page(
    request: HttpRequest,
    owner: Any,
    values: dict[str, str],
    errors: dict[str, list[str]],
    template: JobTemplate | None = None,
) -> HttpResponse:
    return render(
        request,
        "job_templates/form.html",
        {"values": values, "errors": errors, "template": template, "groups": groups_of(owner)},
        status=400 if errors else 200,
    )


def who_may_use(template: JobTemplate) -> str:
    if template.visibility == JobTemplate.Visibility.PUBLIC or template.shared_with_group is None:
        return template.visibility
    return GROUP_CHOICE + template.shared_with_group.name


def posted(request: HttpRequest, values: dict[str, str]) -> tuple[dict[str, str], job_templates.Fields]:
    """The form's values as posted, and save()'s fields from them ("Who may use it" is a
    visibility, or `group:<name>`: private to all but that group's members)."""
    values = values | {key: request.POST.get(key, "") for key in values}
    choice = values["visibility"]
    group = choice.removeprefix(GROUP_CHOICE) if choice.startswith(GROUP_CHOICE) else ""
    return values, job_templates.Fields(
        name=values["name"],
        config_text=values["config_text"],
        summary=values["summary"],
        description=values["description"],
        visibility=JobTemplate.Visibility.PRIVATE if group else choice,
        shared_with_group=group,
    )


def form_errors(error: JobConfigError) -> dict[str, list[str]]:
    errors: dict[str, list[str]] = {}
    for field, message in error.errors:
        if field.startswith("config."):  # (the config's own path, shown with its message)
            errors.setdefault("config", []).append(f"{field.removeprefix('config.')}: {translated(message)}")
        else:  # (the group is chosen in the visibility's select)
            errors.setdefault("visibility" if field == "sharedWithGroup" else field, []).append(translated(message))
    return errors


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
        return form_page(request, request.user, values, {})
    values, fields = posted(request, values)
    try:
        template = job_templates.save(request.user, **fields)
    except JobConfigError as error:
        return form_page(request, request.user, values, form_errors(error))
    messages.success(request, _("Template %(name)s saved.") % {"name": template.name})
    return redirect("templates:detail", template.pk)


@require_http_methods(["GET", "POST"])
def template_edit(request: HttpRequest, template_id: int) -> HttpResponse:
    """Its owner changes it: name, texts, config, and who may use it (the owner's groups offered)."""
    template = own_template_or_404(request, template_id)
    values = {
        "name": template.name,
        "summary": template.summary,
        "description": template.description,
        "visibility": who_may_use(template),
        "config_text": template.config_text,
    }
    if request.method == "GET":
        return form_page(request, template.owner, values, {}, template)
    values, fields = posted(request, values)
    try:
        job_templates.update(template, **fields)
    except JobConfigError as error:
        template.refresh_from_db()  # (the page names it as it is still stored)
        return form_page(request, template.owner, values, form_errors(error), template)
    messages.success(request, _("Template %(name)s saved.") % {"name": template.name})
    return redirect("templates:detail", template.pk)


@require_http_methods(["GET", "POST"])
def template_delete(request: HttpRequest, template_id: int) -> HttpResponse:
    template = own_template_or_404(request, template_id)
    if request.method == "GET":
        return render(request, "job_templates/delete.html", {"template": template})
    template.delete()
    messages.success(request, _("Template %(name)s deleted.") % {"name": template.name})
    return redirect("templates:list")
