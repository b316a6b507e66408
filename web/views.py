"""Job pages: list, submit, detail, and the small JSON/text endpoints their live updates poll.

Views are thin: parse the request, find the job the user may see (404 otherwise), call one verb
of jobs.actions, render.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from functools import lru_cache
from typing import Any, cast

from django import forms as django_forms
from django.conf import settings
from django.contrib import messages
from django.db.models import Sum
from django.http import Http404, HttpRequest, HttpResponse, JsonResponse, StreamingHttpResponse
from django.shortcuts import redirect, render
from django.template import Context, Engine, Template
from django.template.loader import render_to_string
from django.urls import reverse
from django.utils import timezone
from django.utils.translation import get_language, ngettext
from django.utils.translation import gettext as _
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from accounts.models import SshPublicKey
from accounts.throttling import throttle_wait
from clusters.models import GpuType, VirtualCluster, open_vc_names
from jobs import actions, job_templates
from jobs import submit as submitting
from jobs.logs import ALL, STREAMS, log_lines, masked_chunks, masked_window, search_log, stream_path
from jobs.models import Job, JobState, Sweep
from jobs.protocol import MASK, JobConfigError, editable_document, export, export_config, load
from jobs.protocol.errors import FieldError
from jobs.protocol.submission import read
from jobs.storage.configs import usable_storages
from jobs.usage import gpu_hours_held
from scheduling.admission import never_fits_reason
from scheduling.models import UsageDay
from scheduling.sharing import queue_place
from web.api.shapes import borrowed_from, time_limit_status
from web.api.throttles import SubmitThrottle
from web.csv_export import csv_lines, in_pages
from web.job_list import PAGE_SIZES, JobListQuery
from web.job_page import LogSource, app_rows, attempt_rows, find_log_source, job_or_404, log_sources, selected_log
from web.job_templates.views import template_or_404
from web.reasons import job_reason, reason_text
from web.submit_errors import error_summary, field_errors, line_errors, said
from web.submit_form import (
    PRIORITY_CLASSES,
    ImportFileForm,
    JobFormData,
    config_to_form,
    config_to_yaml,
    default_role,
    form_input_errors,
    form_to_config,
)
from web.templatetags.portal import duration, gpu_list, job_size, port_links, state_label

LOG_TAIL_DEFAULT = 64 * 1024
LOG_TAIL_MAX = 1024 * 1024
LOG_SEARCH_MAX_QUERY = 200
LOG_CONTEXT_LINES = 40  # before and after a search result opened in its context
MAX_DATABASE_ID = 2**63 - 1


# --- job list -------------------------------------------------------------------------------------


@require_GET
def job_list(request: HttpRequest) -> HttpResponse:
    query = JobListQuery.from_request(request)
    page = query.page()
    context = {
        "query": query,
        "page": page,
        "states": JobState.values,
        "virtual_clusters": VirtualCluster.objects.values_list("name", flat=True),
        "priority_classes": list(PRIORITY_CLASSES),
        "is_admin": query.is_admin,
        "show_owner": query.shows_everyone,
        "page_sizes": PAGE_SIZES,
    }
    return render(request, "jobs/list.html", context)


@require_GET
def job_list_csv(request: HttpRequest) -> StreamingHttpResponse:
    """Every job the list's filters select (not only the page), in the list's order, as CSV."""
    query = JobListQuery.from_request(request)
    header = [
        _("Name"), _("User"), _("State"), _("Virtual cluster"), _("Tasks"), _("GPUs"),
        _("Submitted"), _("Started"), _("Finished"), _("Duration"), _("Retries"), _("Exit code"), _("Why waiting"),
    ]  # fmt: skip

    def rows() -> Iterator[list[Any]]:
        for job in in_pages(query.all_rows()):
            tasks, gpus = job_size(job.normalized)
            why = job_reason(job) if job.state == JobState.WAITING else ""
            yield [
                job.name, job.owner.get_username(), job.state, job.virtual_cluster.name, tasks, gpus,
                _iso(job.created_at), _iso(job.launched_at), _iso(job.completed_at), duration(job),
                job.retries_used, job.exit_code, why,
            ]  # fmt: skip

    return _csv_response(csv_lines([str(cell) for cell in header], rows()), "jobs.csv")


def _iso(moment: Any) -> str:
    return timezone.localtime(moment).isoformat(timespec="seconds") if moment else ""


def _csv_response(lines: Iterator[str], file_name: str) -> StreamingHttpResponse:
    response = StreamingHttpResponse(lines, content_type="text/csv; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="{_safe_file_name(file_name)}"'
    return response


@require_GET
def job_states(request: HttpRequest) -> JsonResponse:
    """States of the listed jobs and the per-state counts, for the list's live updates."""
    query = JobListQuery.from_request(request)
    ids = [int(part) for part in request.GET.get("ids", "").split(",") if is_database_id(part)][:500]
    states = dict(query.visible().filter(pk__in=ids).values_list("pk", "state")) if ids else {}
    counts = query.counts()
    return JsonResponse(
        {
            "states": {str(pk): state for pk, state in states.items()},
            "counts": counts,
            "labels": {state: state_label(state) for state in JobState.values},
        }
    )


def is_database_id(text: str) -> bool:
    """Digits that fit a database id (a bigger number would overflow the query, not match)."""
    text = text.strip()
    return text.isdigit() and len(text) <= 19 and int(text) <= MAX_DATABASE_ID


# --- submit ---------------------------------------------------------------------------------------


def _submit_context(request: HttpRequest, **extra: Any) -> dict[str, Any]:
    data: JobFormData = extra.pop("form_data", None) or JobFormData.blank(request.user.get_username())
    by_field: dict[str, list[str]] = extra.pop("errors_by_field", {})
    role_names = [role.get("name", "").strip() for role in data.roles]
    roles = [
        {"prefix": f"roles-{index}", "values": values, "errors": _role_errors(by_field, index)}
        for index, values in enumerate(data.roles)
    ]
    storages = usable_storages(request.user)
    context: dict[str, Any] = {
        "mode": "form",
        "form_data": data,
        "roles": roles,
        "job_errors": {key: value for key, value in by_field.items() if not key.startswith("roles-")},
        "error_summary": error_summary(by_field, role_names),
        "general_errors": [],
        "line_errors": [],
        "config_text": "",
        "virtual_clusters": open_vc_names(request.user),
        "gpu_types": list(GpuType.objects.values_list("name", flat=True)),
        "priority_classes": PRIORITY_CLASSES,
        "storages": storages,
        "storage_names": [storage.name for storage in storages],
        "profile_key_count": SshPublicKey.objects.filter(user=cast(Any, request.user)).count(),
        "file_form": ImportFileForm(),
        "role_template": _role_template_html(),
        "default_image": settings.PAI_DEFAULT_IMAGE,
        "notebook_image": settings.PAI_NOTEBOOK_IMAGE,
    }
    context.update(extra)
    context["error_count"] = len(context["error_summary"]) + len(context["general_errors"])
    return context


def _role_template_html() -> str:
    """The blank task role that Add role copies: the same for every user and request, so it is
    rendered once per language (and per version of the template file, which development reloads)."""
    compiled = Engine.get_default().get_template("jobs/_role.html")  # the cached loader's object
    return _rendered_role_template(compiled, get_language())


@lru_cache(maxsize=16)
def _rendered_role_template(compiled: Template, language: str | None) -> str:
    return compiled.render(Context({"role": {"prefix": "roles-__i__", "values": default_role(), "errors": {}}}))


def _role_errors(by_field: dict[str, list[str]], index: int) -> dict[str, list[str]]:
    prefix = f"roles-{index}-"
    return {key[len(prefix) :]: value for key, value in by_field.items() if key.startswith(prefix)}


@require_http_methods(["GET", "POST"])
def submit(request: HttpRequest) -> HttpResponse:
    if _body_too_large(request):
        # Refused before Django reads the body: a file upload would otherwise be spooled to disk first.
        limit_kb = settings.DATA_UPLOAD_MAX_MEMORY_SIZE // 1024
        message = _("The request is too large; the limit is %(limit)d KB.") % {"limit": limit_kb}
        return _submit_page(request, None, status=413, general_errors=[message])
    if request.method == "GET":
        clone_of = request.GET.get("clone", "")
        mode = request.GET.get("mode", "form")  # the tabs work without JavaScript too
        mode = mode if mode in ("form", "text", "file") else "form"
        return _submit_page(request, _initial_form(request), cloned_from=clone_of, mode=mode)
    return _submit_posted(request)


def _submit_posted(request: HttpRequest) -> HttpResponse:
    """One of the page's buttons: Submit, Export, Edit YAML (to_yaml) or back to the form (to_form)."""
    mode = request.POST.get("mode", "form")
    action = request.POST.get("action", "submit")
    form_data = JobFormData.from_post(request.POST)
    if form_data.problems:
        return _submit_page(request, form_data, status=400, general_errors=form_data.problems)
    if action == "submit" and (wait := throttle_wait([SubmitThrottle], request)) is not None:
        message = _("Too many submits; try again in %(seconds)d s.") % {"seconds": int(wait) + 1}
        return _submit_page(request, form_data, status=429, general_errors=[message])
    if mode == "form":
        text = config_to_yaml(form_to_config(form_data))
        input_errors = form_input_errors(form_data)
        if input_errors:
            return _form_input_errors(request, form_data, text, input_errors)
        if action == "to_yaml":
            return _submit_page(request, form_data, mode="text", config_text=text, editing_yaml=True)
    elif mode == "file":
        try:
            text = _imported_text(request)
        except django_forms.ValidationError as error:
            return _submit_page(request, form_data, mode="file", file_errors=error.messages)
        mode = "text"  # errors in an imported file are shown, and fixed, in the text box
    else:
        text = request.POST.get("config_text", "")
    if action == "to_form":
        return _text_to_form(request, text)
    return _submit_or_export(request, action, mode, form_data, text)


def _form_input_errors(
    request: HttpRequest, form_data: JobFormData, text: str, input_errors: dict[str, list[str]]
) -> HttpResponse:
    """The form's own syntax errors, with whatever else the config has, all shown at once."""
    try:
        actions.validate_for_user(request.user, text)
        errors: list[FieldError] = []
    except JobConfigError as error:
        errors = list(error.errors)
    by_field, general = field_errors(errors, [role.get("name", "").strip() for role in form_data.roles])
    for field, messages_of_field in input_errors.items():
        by_field[field] = messages_of_field + by_field.get(field, [])
    return _submit_page(request, form_data, errors_by_field=by_field, general_errors=general, status=400)


def _imported_text(request: HttpRequest) -> str:
    """The uploaded config file's text; raises ValidationError for a wrong or unreadable file."""
    file_form = ImportFileForm(request.POST, request.FILES)
    if not file_form.is_valid():
        raise django_forms.ValidationError(list(file_form.errors["config_file"]))
    return file_form.config_text()


def _submit_or_export(request: HttpRequest, action: str, mode: str, form_data: JobFormData, text: str) -> HttpResponse:
    try:
        if action == "export":
            return _yaml_download(export_config(text), load(text).spec.get("name") or "job")
        job = submitting.submit(request.user, text)
    except JobConfigError as error:
        return _config_errors(request, mode, form_data, text, error)
    except actions.JobNameConflict as error:
        field = "name" if mode == "form" else error.field
        return _config_errors(request, mode, form_data, text, JobConfigError([(field, error.message)]))
    if isinstance(job, Sweep):
        messages.success(
            request,
            _("Sweep %(name)s submitted: %(count)d runs.") % {"name": job.full_name, "count": job.runs.count()},
        )
        return redirect("sweeps:detail", job.full_name)
    messages.success(request, _("Job %(name)s submitted.") % {"name": job.full_name})
    never_fits = never_fits_reason(job)
    if never_fits:
        messages.warning(
            request,
            _("This job can never run on the cluster as it is: %(reason)s. Stop it, or clone it asking for less.")
            % {"reason": reason_text(never_fits)},
        )
    return redirect(job)


def _body_too_large(request: HttpRequest) -> bool:
    try:
        length = int(request.META.get("CONTENT_LENGTH") or 0)
    except ValueError:
        return True
    return length > settings.DATA_UPLOAD_MAX_MEMORY_SIZE


def _initial_form(request: HttpRequest) -> JobFormData | None:
    """The form as a clone (`?clone=<job>`) or a template (`?template=<id>&p.lr=0.1`) fills it."""
    if template_id := request.GET.get("template"):
        template = template_or_404(request, template_id)
        values = {key.removeprefix("p."): str(value) for key, value in request.GET.items() if key.startswith("p.")}
        data = config_to_form(job_templates.config_with(template, values))
        data.job["name"] = _free_name(request.user, data.job["name"] or "job")
        return _without_secret_values(data)
    clone_of = request.GET.get("clone")
    if not clone_of:
        return None  # the fresh form
    job = job_or_404(request, clone_of)
    data = config_to_form(_not_a_sweep_run(_as_submitted(job)))
    data.job["name"] = _free_name(job.owner, f"{job.name}-clone")
    return _without_secret_values(data)


def _without_secret_values(data: JobFormData) -> JobFormData:
    """Secret values are never shown: a clone or a template keeps the names and asks for the values."""
    secrets = data.base_config.pop("secrets", None)
    data.job["secrets"] = "\n".join(f"{name}=" for name in (secrets if isinstance(secrets, dict) else {}))
    if data.job["registry_password"] == MASK:
        data.job["registry_password"] = ""  # stored masked: typed again, like a secret
    return data


def _as_submitted(job: Job) -> dict[str, Any]:
    """The config as submitted, so `<% $parameters.x %>` stay references a clone can change; the
    normalized spec for a job whose text cannot be read any more (made before the rules changed)."""
    try:
        return editable_document(job.config_text)
    except JobConfigError:
        return dict(job.normalized)


def _not_a_sweep_run(document: dict[str, Any]) -> dict[str, Any]:
    """A sweep run's clone is a job of its own with the run's values (the sweep page's "Submit with
    these values"): its `extras.sweepRun` goes."""
    extras = document.get("extras")
    if isinstance(extras, dict) and "sweepRun" in extras:
        extras = {key: value for key, value in extras.items() if key != "sweepRun"}
        document = {key: value for key, value in document.items() if key != "extras"} | (
            {"extras": extras} if extras else {}
        )
    return document


def _free_name(owner: Any, prefix: str) -> str:
    """`prefix`, or `prefix-2`, `-3`... : the first the owner has no job of."""
    taken = set(Job.objects.filter(owner=owner, name__startswith=prefix).values_list("name", flat=True))
    if prefix not in taken:
        return prefix
    number = 2
    while f"{prefix}-{number}" in taken:
        number += 1
    return f"{prefix}-{number}"


def _text_to_form(request: HttpRequest, text: str) -> HttpResponse:
    """Back from Edit YAML (or a pasted config) to the form; a v1 JSON config is converted first."""
    try:
        submission = read(text)
        doc = dict(submission.config.spec) if submission.version == 1 else submission.document
    except JobConfigError as error:
        return _config_errors(request, "text", None, text, error)
    return _submit_page(request, config_to_form(doc), mode="form")


def _config_errors(
    request: HttpRequest, mode: str, form_data: JobFormData | None, text: str, error: JobConfigError
) -> HttpResponse:
    errors = list(error.errors)
    if mode == "form" and form_data is not None:
        by_field, general = field_errors(errors, [role.get("name", "").strip() for role in form_data.roles])
        return _submit_page(request, form_data, errors_by_field=by_field, general_errors=general, status=400)
    located = line_errors(text, errors, syntax_line=getattr(error, "line", None))
    return _submit_page(request, form_data, mode="text", config_text=text, line_errors=located, status=400)


def _submit_page(request: HttpRequest, form_data: JobFormData | None, status: int = 200, **extra: Any) -> HttpResponse:
    context = _submit_context(request, form_data=form_data, **extra)
    return render(request, "jobs/submit.html", context, status=status)


def _safe_file_name(name: str) -> str:
    return "".join(char for char in name if char.isalnum() or char in "-._") or "job"


def _yaml_download(text: str, name: str) -> HttpResponse:
    response = HttpResponse(text, content_type="application/x-yaml; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="{_safe_file_name(name)}.yaml"'
    return response


# --- job detail -------------------------------------------------------------------------------------


def _detail_context(request: HttpRequest, job: Job) -> dict[str, Any]:
    tasks = list(job.tasks.select_related("node").order_by("role", "index"))
    events = list(job.events.order_by("-created_at", "-id")[:200])
    may_manage = actions.may_manage(request.user, job)
    return {
        "job": job,
        "tasks": tasks,
        "apps": app_rows(job, tasks, request.user),
        "gpu_hours": _gpu_hours(job) if job.gpu_count else None,
        "events": events,
        "may_manage": may_manage,
        "attempts": attempt_rows(job, tasks) if may_manage else [],
        "priority_classes": list(PRIORITY_CLASSES),
        "borrowed_from": borrowed_from(job),
        "preempted_by": (
            Job.objects.select_related("owner", "virtual_cluster").filter(pk=job.ending_by_id).first()
            if job.ending_by_id
            else None
        ),
        **_sharing_context(job),
    }


def _gpu_hours(job: Job) -> dict[str, Any]:
    """GPU-hours held (every run, now) and used (the daily rollups' samples, to the last hour)."""
    used = UsageDay.objects.filter(job=job).aggregate(used=Sum("gpu_used_seconds"))["used"]
    return {"held": gpu_hours_held(job), "used": None if used is None else round(used / 3600, 2)}


def _sharing_context(job: Job) -> dict[str, Any]:
    """The time limit and time left (API's maxRunTimeSeconds, timeLeftSeconds), and a waiting
    job's place in its VC's queue and expected start."""
    found = queue_place(job)
    return {
        "time_left": time_limit_status(job)["timeLeftSeconds"],
        "queue_place": found,
    }


@require_GET
def job_detail(request: HttpRequest, full_name: str) -> HttpResponse:
    job = job_or_404(request, full_name, summary=True)
    context = _detail_context(request, job)
    if context["may_manage"]:
        sources = log_sources(job, context["tasks"])
        wanted = request.GET.get("log") or f"task:{request.GET.get('task', '')}"
        context.update(
            log_sources=sources,
            log_source=selected_log(sources, wanted),
            log_tail=LOG_TAIL_DEFAULT,
            log_stream=_log_stream(request),
        )
    return render(request, "jobs/detail.html", context)


@require_GET
def job_status(request: HttpRequest, full_name: str) -> JsonResponse:
    """The live part of the job page, rendered on the server, for the page's poller."""
    job = job_or_404(request, full_name, summary=True)
    context = _detail_context(request, job)
    html = render_to_string("jobs/_job_live.html", context, request=request)
    logs = (
        [{"key": s.key, "label": s.label} for s in log_sources(job, context["tasks"])] if context["may_manage"] else []
    )
    return JsonResponse({"state": job.state, "finished": job.is_finished, "html": html, "logs": logs})


def _log_source_or_404(request: HttpRequest, job: Job) -> LogSource | None:
    """The log `?log=task:<pk>|attempt:<pk>` (or the older `?task=<pk>`) names; the first task's
    when none is named; None when the job has no task."""
    key = request.GET.get("log") or (f"task:{request.GET['task']}" if request.GET.get("task") else "")
    if not key:
        first = job.tasks.order_by("role", "index").first()
        key = f"task:{first.pk}" if first else ""
        if not key:
            return None
    source = find_log_source(job, key)
    if source is None:
        raise Http404(_("No such log."))
    return source


def _log_stream(request: HttpRequest) -> str:
    """`?stream=all|stdout|stderr` (all when absent or unknown)."""
    stream = request.GET.get("stream", ALL)
    return stream if stream in STREAMS else ALL


@require_GET
def job_log(request: HttpRequest, full_name: str) -> HttpResponse:
    """The end of one stream of one attempt's log as text (`?stream=`: all, stdout, stderr),
    never starting mid-line, the job's secrets masked.
    X-Log-Start (where the text starts, in bytes) and X-Log-Size tell the page what was left out."""
    job = job_or_404(request, full_name)
    source = _log_source_or_404(request, job)
    try:
        tail = min(max(int(request.GET.get("tail", LOG_TAIL_DEFAULT)), 1), LOG_TAIL_MAX)
    except ValueError:
        tail = LOG_TAIL_DEFAULT
    window = masked_window(job, stream_path(source.log_path, _log_stream(request)) if source else "", tail)
    response = HttpResponse(window.text, content_type="text/plain; charset=utf-8")
    response["X-Log-Start"] = str(window.start)
    response["X-Log-Size"] = str(window.size)
    return response


@require_GET
def job_tasks_csv(request: HttpRequest, full_name: str) -> StreamingHttpResponse:
    """The job page's task table as CSV."""
    job = job_or_404(request, full_name, summary=True)
    header = [
        _("Role"), _("Index"), _("State"), _("Node"), _("IP"), _("Ports"), _("GPUs"), _("Attempt"), _("Retries"),
        _("Exit code"), _("Your command's exit code"), _("Started"), _("Finished"),
    ]  # fmt: skip
    tasks = job.tasks.select_related("node").order_by("role", "index")
    rows = (
        [
            task.role,
            task.index,
            task.state,
            task.node.name if task.node else "",
            task.ip,
            " ".join(f"{port['label']}:{port['port']}" for port in port_links(task)),
            gpu_list(task.gpus),
            task.attempt,
            task.retries,
            task.exit_code,
            task.user_exit_code,
            _iso(task.started_at),
            _iso(task.finished_at),
        ]
        for task in tasks
    )
    return _csv_response(
        csv_lines([str(cell) for cell in header], rows), f"{job.full_name.replace('~', '-')}-tasks.csv"
    )


@require_GET
def job_log_search(request: HttpRequest, full_name: str) -> JsonResponse:
    """The lines of one stream of one attempt's whole log that hold `?q=` (case-insensitive), with
    their line numbers: the first PAI_LOG_SEARCH_MAX_MATCHES of them, and how many there are."""
    job = job_or_404(request, full_name)
    source = _log_source_or_404(request, job)
    query = request.GET.get("q", "").strip()
    if not query or len(query) > LOG_SEARCH_MAX_QUERY:
        message = _("q: say what to search for, in 1 to %(most)d characters.") % {"most": LOG_SEARCH_MAX_QUERY}
        return JsonResponse({"code": "InvalidParametersError", "message": message, "field": "q"}, status=400)
    limit = settings.PAI_LOG_SEARCH_MAX_MATCHES
    found = search_log(job, stream_path(source.log_path, _log_stream(request)) if source else "", query, limit)
    return JsonResponse(
        {
            "query": query,
            "lines": found.lines,
            "matched": found.matched,
            "capped": found.capped,
            "matches": [{"line": number, "text": text} for number, text in found.matches],
        }
    )


@require_GET
def job_log_lines(request: HttpRequest, full_name: str) -> JsonResponse:
    """A search result in its context: the lines of one stream of one attempt's whole log around
    `?around=` (a line number, from 1), LOG_CONTEXT_LINES before and after it."""
    job = job_or_404(request, full_name)
    source = _log_source_or_404(request, job)
    around = request.GET.get("around", "")
    if not around.isdigit() or not 0 < int(around) < 10**12:
        return JsonResponse(
            {"code": "InvalidParametersError", "message": _("around: a line number, from 1."), "field": "around"},
            status=400,
        )
    line = int(around)
    first = max(1, line - LOG_CONTEXT_LINES)
    path = stream_path(source.log_path, _log_stream(request)) if source else ""
    found = log_lines(job, path, first, line - first + 1 + LOG_CONTEXT_LINES)
    return JsonResponse(
        {"around": line, "last": found.last, "lines": [{"line": n, "text": text} for n, text in found.lines]}
    )


@require_GET
def job_log_download(request: HttpRequest, full_name: str) -> StreamingHttpResponse:
    """One stream of one attempt's whole log as a file, the job's secrets masked."""
    job = job_or_404(request, full_name)
    source = _log_source_or_404(request, job)
    if source is None:
        raise Http404(_("No such log."))
    stream = _log_stream(request)
    chunks = masked_chunks(job, stream_path(source.log_path, stream))
    response = StreamingHttpResponse(chunks, content_type="text/plain; charset=utf-8")
    file_name = source.file_name if stream == ALL else source.file_name.replace(".log", f".{stream}.log")
    response["Content-Disposition"] = f'attachment; filename="{_safe_file_name(file_name)}"'
    return response


@require_http_methods(["GET", "POST"])
def job_stop(request: HttpRequest, full_name: str) -> HttpResponse:
    """GET asks for confirmation; POST stops."""
    job = job_or_404(request, full_name)
    if request.method == "GET":
        return render(request, "jobs/stop_confirm.html", {"job": job})
    done = _("Stop requested for %(name)s.") % {"name": job.full_name}
    refused = _("The job has already finished.")
    return _change_state(request, job, actions.stop_job, done, refused=refused)


def _selected_ids(values: list[str]) -> list[int]:
    return [int(value) for value in values if value.isdigit() and len(value) < 19][:500]


@require_http_methods(["GET", "POST"])
def jobs_stop_selected(request: HttpRequest) -> HttpResponse:
    """The list's bulk stop: GET lists the ticked jobs for confirmation; POST stops them."""
    if request.method == "GET":
        jobs = actions.stoppable_jobs(request.user, _selected_ids(request.GET.getlist("ids")))
        return render(request, "jobs/stop_selected.html", {"jobs": jobs})
    stopped = actions.stop_jobs(request.user, _selected_ids(request.POST.getlist("ids")))
    messages.success(
        request,
        ngettext("Stop requested for %(count)d job.", "Stop requested for %(count)d jobs.", stopped)
        % {"count": stopped},
    )
    return redirect("jobs:list")


@require_POST
def job_priority(request: HttpRequest, full_name: str) -> HttpResponse:
    """A waiting job's priority class, from the job page (checked as at submit)."""
    job = job_or_404(request, full_name)
    try:
        job = actions.change_priority_class(job, request.user, request.POST.get("priority_class"))
        messages.success(
            request, _("%(name)s now runs as class %(cls)s.") % {"name": job.full_name, "cls": job.priority_class}
        )
    except actions.JobStateError:
        messages.error(request, _("A job's class changes only while it waits."))
    except JobConfigError as error:
        messages.error(request, "; ".join(said(error.errors)))
    return redirect(job)


@require_POST
def job_restart(request: HttpRequest, full_name: str) -> HttpResponse:
    job = job_or_404(request, full_name)
    done = _("Job %(name)s queued again.") % {"name": job.full_name}
    refused = _("Only a finished job can be started again.")
    return _change_state(request, job, actions.restart_job, done, refused=refused)


def _change_state(
    request: HttpRequest, job: Job, verb: Callable[[Job, Any], object], done: str, *, refused: str
) -> HttpResponse:
    """Run a verb that the job's state (or its VC, checked again) may refuse; say how it went on
    the job's page."""
    try:
        verb(job, request.user)
        messages.success(request, done)
    except actions.JobStateError:
        messages.error(request, refused)
    except JobConfigError as error:  # (a restart: the owner may no longer submit to the job's VC)
        messages.error(request, "; ".join(said(error.errors)))
    return redirect(job)


@require_GET
def job_clone(request: HttpRequest, full_name: str) -> HttpResponse:
    job = job_or_404(request, full_name)
    return redirect(f"{reverse('jobs:submit')}?clone={job.full_name}")


@require_GET
def job_export(request: HttpRequest, full_name: str) -> HttpResponse:
    """The job's config as v2 YAML, as submitted: references kept, secrets masked."""
    job = job_or_404(request, full_name)
    try:
        text = export_config(job.config_text)
    except JobConfigError:
        text = export(job.normalized)  # a text that no longer loads: its normalized spec, secrets masked
    return _yaml_download(text, job.name)
