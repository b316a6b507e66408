"""What the v1 and v2 job views share: finding a job, submitting, the list query, the detail."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

from django.conf import settings
from django.db.models import Count, Exists, Expression, F, OuterRef, Q, QuerySet
from django.http import HttpResponse
from django.urls import reverse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter
from rest_framework.request import Request

from catalogue import Message, Text, joined, text_of
from catalogue.reasons import stored_parts
from clusters.texts import blocked_by
from jobs import actions
from jobs.models import Job, JobState, JobTag, Sweep, Task
from jobs.protocol import mask_config_text
from jobs.protocol.fields import resource_field, vc_field
from jobs.protocol.priority import DEFAULT_PRIORITY_CLASS, PRIORITY_CLASSES
from jobs.ssh import openpai_ssh_info
from jobs.submit import submit as submit_verb
from queries.prepared import Prepared
from scheduling.admission import never_fits_reason
from web.api import links, shapes
from web.api.auth import is_application_token
from web.api.errors import ApiError, is_v1_path, no_job
from web.api.throttles import charge_list_rows

DEFAULT_LIST_LIMIT = 5000
# `order=<field>[,ASC|DESC]`: every field OpenPAI's list sorts by (controllers/v2/job.js) -> ours.
ORDER_FIELDS: dict[str, F | Expression] = {
    "jobName": F("name"),
    "submissionTime": F("created_at"),
    "username": F("owner__username"),
    "vc": F("virtual_cluster__name"),
    "retries": F("retries_used") + F("transient_retries"),
    "totalTaskNumber": F("task_count"),
    "totalGpuNumber": F("gpu_count"),
    "state": F("state"),
    "completionTime": F("completed_at"),
    "jobPriority": F("priority"),
}
ORDER_DIRECTIONS = ("ASC", "DESC")

LIST_PARAMETERS = [
    OpenApiParameter("username", str, description="comma list of user names"),
    OpenApiParameter("vc", str, description="comma list of virtual clusters"),
    OpenApiParameter("state", str, description="comma list of states (WAITING, RUNNING, ...)"),
    OpenApiParameter("keyword", str, description="substring of the job name, user name or VC"),
    OpenApiParameter("offset", int),
    OpenApiParameter("limit", int, description="at most 50000 (default 5000)"),
    OpenApiParameter(
        "order",
        str,
        description="<field>[,ASC|DESC] (ASC when left out), field one of " + ", ".join(ORDER_FIELDS),
    ),
    OpenApiParameter("withTotalCount", bool, description="true: answer {totalCount, data}"),
    OpenApiParameter(
        "jobPriority", str, description="comma list of priority classes (crit, prod, test, oppo; default)"
    ),
    OpenApiParameter("tagsContain", str, description="comma list of tags: jobs with any of them"),
    OpenApiParameter("tagsNotContain", str, description="comma list of tags: jobs with none of them"),
]
JOB_NAME_PARAMETER = OpenApiParameter("full_name", OpenApiTypes.STR, OpenApiParameter.PATH, description="<user>~<job>")


def find_job(request: Request, full_name: str) -> Job:
    """The job if the user may act on it and read it in full; others' jobs are answered exactly like
    missing ones."""
    try:
        return actions.get_job_for(request.user, full_name)
    except Job.DoesNotExist as error:
        raise no_job(full_name) from error


def check_may_act_on(request: Request, job: Job) -> None:
    """An application token acts as its user alone: it reads an admin's view of other users' jobs,
    but stopping, starting or taking the SSH key of another user's job needs the admin signed in."""
    if is_application_token(request) and job.owner_id != request.user.pk:
        raise ApiError(403, "ForbiddenUserError", Message.of("api.auth.application_token_on_others", job=job.full_name))


def find_job_to_change(request: Request, full_name: str, verb: Text) -> Job:
    """The job the user asks to change (stop or start it, its class, its tags): the owner and admins
    may; another user who sees it in the shared list is refused with 403 ForbiddenUserError, as
    OpenPAI answers; a job they cannot see is missing (404)."""
    job = find_job_summary(request, full_name)
    if not actions.may_manage(request.user, job):
        user = request.user.get_username()
        raise ApiError(
            403, "ForbiddenUserError", Message.of("api.job.not_allowed", user=user, verb=verb(), job=full_name)
        )
    check_may_act_on(request, job)
    return job


def find_job_summary(request: Request, full_name: str) -> Job:
    """The job if the user may read its summary (another user's too, on a shared job list)."""
    try:
        return actions.get_job_summary_for(request.user, full_name)
    except Job.DoesNotExist as error:
        raise no_job(full_name) from error


def submit(request: Request) -> Job | Sweep:
    """The v1 and v2 routes' submit: the body's config, a job or a sweep (jobs.submit)."""
    text = request.data
    if not isinstance(text, str) or not text.strip():
        code = "InvalidParametersError" if is_v1_path(request.path) else "InvalidProtocolError"
        raise ApiError(400, code, Message.of("api.body.no_config"))
    return submit_verb(request.user, text)


# What a never-fits reason's code is about (clusters.texts.blocked_by) -> the resourcePerInstance key to change.
RESOURCE_KEYS = {"gpu": "gpu", "cpu": "cpu", "memory": "memoryMB", "ports": "ports"}


def cannot_fit_warning(job: Job) -> dict[str, Any] | None:
    """The submit answer's `warning` for a job that can never run on the cluster as it is
    (scheduling.admission's judgement, the submit page's): the job is still accepted, as OpenPAI
    accepted it (its clients expect 202/201 for a valid config, and nodes may yet be added), but
    the answer says so, naming the field to change, and why (`reasonMessages`: its codes)."""
    reason = never_fits_reason(job)
    if reason is None:
        return None
    return {
        "code": "JobCannotFitWarning",
        "field": _cannot_fit_field(job, reason),
        "message": f"This job can never run on the cluster as it is: {joined(reason)}. "
        "Stop it, or submit it again asking for less.",
        "reasonMessages": stored_parts(reason),
    }


def _cannot_fit_field(job: Job, reason: list[Message]) -> str | None:
    """The field in the config as submitted: v2's path, or v1's (`taskRoles[0].cpuNumber`)."""
    blocking = blocked_by(reason)
    if blocking == "vc":
        return vc_field(job.protocol_version)
    key = RESOURCE_KEYS.get(blocking or "")
    if key is None:
        return None
    spec = job.normalized
    roles = spec["taskRoles"]
    # The role asking the most of it per task (the one a smaller ask helps most).
    role = max(roles, key=lambda name: _amount(roles[name]["resourcePerInstance"].get(key)))
    return resource_field(spec, job.protocol_version, role, key)


def _amount(value: Any) -> int:
    return sum(value.values()) if isinstance(value, dict) else int(value or 0)


def _int_param(params: Any, name: str, default: int) -> int:
    raw = params.get(name)
    if raw in (None, ""):
        return default
    try:
        value = int(raw)
    except (TypeError, ValueError) as error:
        raise ApiError(
            400, "InvalidParametersError", Message.of("api.query.not_an_integer", name=name), name
        ) from error
    if value < 0:
        raise ApiError(400, "InvalidParametersError", Message.of("api.query.negative", name=name), name)
    return value


def _comma_list(params: Any, name: str) -> list[str]:
    return [item for item in (params.get(name) or "").split(",") if item]


def filtered_jobs(request: Request, params: Any) -> QuerySet[Job]:
    jobs = actions.listed_jobs(request.user)
    if usernames := _comma_list(params, "username"):
        jobs = jobs.filter(owner__username__in=usernames)
    if vcs := _comma_list(params, "vc"):
        jobs = jobs.filter(virtual_cluster__name__in=vcs)
    if states := _comma_list(params, "state"):
        unknown = sorted(set(states) - set(JobState.values))
        if unknown:
            raise ApiError(
                400, "InvalidParametersError", Message.of("api.query.unknown_states", states=unknown), "state"
            )
        jobs = jobs.filter(state__in=states)
    if "jobPriority" in params:
        jobs = jobs.filter(priority__in=_priorities(_comma_list(params, "jobPriority")))
    if tags := _comma_list(params, "tagsContain"):
        jobs = jobs.filter(Exists(JobTag.objects.filter(job=OuterRef("pk"), name__in=tags)))
    if tags := _comma_list(params, "tagsNotContain"):
        jobs = jobs.exclude(Exists(JobTag.objects.filter(job=OuterRef("pk"), name__in=tags)))
    if keyword := params.get("keyword"):
        jobs = jobs.filter(
            Q(name__icontains=keyword)
            | Q(owner__username__icontains=keyword)
            | Q(virtual_cluster__name__icontains=keyword)
        )
    return jobs


def _priorities(classes: list[str]) -> set[int]:
    """OpenPAI's `default` is a job without a class, which both OpenPAI and the portal run as `test`."""
    unknown = sorted(set(classes) - {*PRIORITY_CLASSES, "default"})
    if unknown:
        raise ApiError(
            400, "InvalidParametersError", Message.of("api.query.unknown_classes", classes=unknown), "jobPriority"
        )
    return {PRIORITY_CLASSES[DEFAULT_PRIORITY_CLASS if name == "default" else name] for name in classes}


def ordered(jobs: QuerySet[Job], order: str | None) -> QuerySet[Job]:
    """OpenPAI's `order=<field>,ASC|DESC`; newest first when absent. An unknown field or direction
    is refused (OpenPAI ignores it, which hides a typo behind a list in the wrong order)."""
    if not order:
        return jobs.order_by("-created_at", "-id")
    field, _, direction = order.partition(",")
    expression = ORDER_FIELDS.get(field)
    if expression is None:
        raise ApiError(
            400,
            "InvalidParametersError",
            Message.of("api.query.order_field", field=field, fields=list(ORDER_FIELDS)),
            "order",
        )
    direction = direction or "ASC"
    if direction not in ORDER_DIRECTIONS:
        raise ApiError(
            400, "InvalidParametersError", Message.of("api.query.order_direction", direction=direction), "order"
        )
    if field == "totalTaskNumber":
        jobs = jobs.annotate(task_count=Count("tasks"))
    sort = expression.asc(nulls_last=True) if direction == "ASC" else expression.desc(nulls_first=True)
    return jobs.order_by(sort, "-id")


def job_list(request: Request, params: Any) -> HttpResponse:
    """OpenPAI's list: a JSON array, or {totalCount, data} with withTotalCount=true; its items'
    JSON as shapes.summary_json keeps it."""
    offset = _int_param(params, "offset", 0)
    limit = _int_param(params, "limit", DEFAULT_LIST_LIMIT)
    cap = settings.PAI_API_MAX_LIST_LIMIT
    if limit > cap:
        raise ApiError(400, "InvalidParametersError", Message.of("api.query.limit", most=cap), "limit")
    order = params.get("order")
    jobs: QuerySet[Job] | None = None
    if limit and _is_poll(params, order):  # (a page of none is no query)
        reads = _page_reads(actions.listed_owner(request.user), order, offset, limit)
        page_rows: Any = reads.rows(*reads.args)
        page_tags: Callable[[], dict[int, tuple[str, ...]]] = lambda: shapes.tags_of_rows(reads.tags(*reads.args))  # noqa: E731
    else:
        jobs = filtered_jobs(request, params)
        page = ordered(jobs, order)[offset : offset + limit]
        page_rows = shapes.summary_rows(page)
        page_tags = lambda: shapes.tags_by_job(page)  # noqa: E731
    rows = list(page_rows)
    created = shapes.SUMMARY_CREATED_MS
    summaries = shapes.spec_summaries.get_many([(row[0], row[created]) for row in rows])
    items = shapes.summary_json.items(rows, summaries, page_tags() if rows else {})
    charge_list_rows(request, len(items))
    data = "[" + ",".join(items) + "]"
    if params.get("withTotalCount") == "true":
        total = (jobs if jobs is not None else filtered_jobs(request, params)).count()
        data = f'{{"totalCount":{total},"data":{data}}}'
    return HttpResponse(data, content_type="application/json")


# The list as clients poll it, no filter (a user's own jobs, or everyone's where they see them):
# its page's and its tags' SQL compiled once per order and page (Prepared), as the job detail's
# reads are; Django built and compiled both anew for each request, most of a short page's CPU.
LIST_FILTERS = ("username", "vc", "state", "jobPriority", "tagsContain", "tagsNotContain", "keyword")
PAGE_READS_LIMIT = 256  # pages kept (order, offset, limit, whose): past this many, start over


class _PageReads(NamedTuple):
    rows: Prepared[tuple[Any, ...]]
    tags: Prepared[tuple[int, str]]
    args: tuple[int, ...]  # the owner's id, or none for everyone's jobs


_page_reads_kept: dict[tuple[bool, str | None, int, int], tuple[Prepared[Any], Prepared[Any]]] = {}


def _is_poll(params: Any, order: str | None) -> bool:
    """No filter, and an order `ordered` takes without more than a sort (else its own path answers,
    or refuses it)."""
    if any(name in params for name in LIST_FILTERS):
        return False
    if not order:
        return True
    field, _, direction = order.partition(",")
    return field in ORDER_FIELDS and field != "totalTaskNumber" and (direction or "ASC") in ORDER_DIRECTIONS


def _page_reads(owner: int | None, order: str | None, offset: int, limit: int) -> _PageReads:
    key = (owner is None, order or None, offset, limit)
    kept = _page_reads_kept.get(key)
    if kept is None:
        if len(_page_reads_kept) >= PAGE_READS_LIMIT:
            _page_reads_kept.clear()
        kinds = () if owner is None else (int,)

        def page(*owner_id: int) -> QuerySet[Job]:
            jobs = Job.objects.select_related("owner", "virtual_cluster")
            jobs = jobs.filter(owner_id=owner_id[0]) if owner_id else jobs
            return ordered(jobs, order)[offset : offset + limit]

        kept = _page_reads_kept[key] = (
            Prepared(lambda *owner_id: shapes.summary_rows(page(*owner_id)), *kinds),
            Prepared(lambda *owner_id: shapes.tags_query(page(*owner_id)), *kinds),
        )
    return _PageReads(kept[0], kept[1], () if owner is None else (owner,))


def log_url(request: Request, job: Job) -> Any:
    """OpenPAI's containerLog: the task's logs route, relative (clients prefix their REST server's
    address), answering {locations}. Logs are the owner's and admins': others get none."""
    if not actions.may_manage(request.user, job):
        return lambda task: None

    def route(task: Any) -> str:
        attempts = {"job_attempt": max(job.job_attempt - 1, 0), "task_attempt": max(task.attempt - 1, 0)}
        kwargs = {"full_name": job.full_name, "role": task.role, "index": task.index, **attempts}
        return reverse("api-task-logs", kwargs=kwargs)

    return route


# A job's tasks with their nodes, for its detail (clients poll it): compiled once. Explicit order:
# Task's default ordering starts with "job", which would join and sort by Job's.
_TASKS_OF_JOB: Prepared[Task] = Prepared(
    lambda job_id: Task.objects.select_related("node").filter(job_id=job_id).order_by("role", "index"), int
)


def detail(request: Request, job: Job) -> dict[str, Any]:
    tasks = _TASKS_OF_JOB(job.pk)
    for task in tasks:
        task.job = job
    return shapes.job_detail(job, tasks, log_url(request, job))


EXECUTE_VERB = text_of("api.verb.stop_or_start")


def execute(request: Request, job: Job) -> str:
    """executionType STOP|START (the job from find_job_to_change); both are idempotent (STOP on a
    finished job changes nothing)."""
    value = request.data.get("value") if hasattr(request.data, "get") else None
    if value not in (Job.ExecutionType.STOP, Job.ExecutionType.START):
        raise ApiError(400, "InvalidParametersError", Message.of("api.job.execution_type"), "value")
    if value == Job.ExecutionType.STOP:
        if job.is_finished:
            return f"Job {job.full_name} has already finished ({job.state})."
        actions.stop_job(job, request.user)
        return f"Execute job {job.full_name} successfully."
    if not job.is_finished:
        return f"Job {job.full_name} is already {job.state}."
    actions.restart_job(job, request.user)
    return f"Execute job {job.full_name} successfully."


def masked_config(job: Job) -> str:
    return str(mask_config_text(job.config_text))


def ssh_info(request: Request, job: Job) -> dict[str, Any]:
    """OpenPAI's webportal finds a task's SSH entry by `id == containerId`: each container's id is
    the task's container id; `taskName` keeps the `<role>-<index>` it was."""
    check_may_act_on(request, job)
    key_url = request.build_absolute_uri(links.ssh_key_path(job)) if job.ssh_private_key_encrypted else ""
    info = dict(openpai_ssh_info(job, key_url))
    container_ids = {f"{task.role}-{task.index}": task.executor_id for task in job.tasks.all()}
    info["containers"] = [
        {**row, "id": container_ids.get(row["id"]) or row["id"], "taskName": row["id"]} for row in info["containers"]
    ]
    return info
