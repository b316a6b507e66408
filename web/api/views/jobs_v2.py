"""`/api/v2/jobs`: OpenPAI's v2 job routes (submit YAML, list, detail, execution, config, ssh, events, logs)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.http import FileResponse, HttpResponse, StreamingHttpResponse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema, inline_serializer
from rest_framework import serializers
from rest_framework.permissions import AllowAny
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from catalogue import Message, Text, text_of
from jobs import actions, logs
from jobs.models import Job, Sweep, Task, TaskAttempt
from jobs.protocol.fields import config_media_type
from web.api import links, shapes
from web.api.errors import ApiError
from web.api.parsers import ConfigTextParser
from web.api.throttles import ListThrottle, SubmitThrottle
from web.api.views import common

ACCEPTED = inline_serializer("Accepted", {"status": serializers.IntegerField(), "message": serializers.CharField()})
CANNOT_FIT = inline_serializer(
    "CannotFitWarning",
    {
        "code": serializers.CharField(help_text="JobCannotFitWarning"),
        "field": serializers.CharField(
            allow_null=True, help_text="the config field to change, e.g. taskRoles.worker.resourcePerInstance.gpu"
        ),
        "message": serializers.CharField(help_text="why the job can never run on the cluster as it is"),
        "reasonMessages": serializers.ListField(
            child=serializers.DictField(),
            help_text='the reason\'s parts as messages: [{"code", "params", "message"}] (docs/contracts.md)',
        ),
    },
)
SUBMITTED = inline_serializer(
    "Submitted",
    {
        "status": serializers.IntegerField(),
        "message": serializers.CharField(),
        "warning": CANNOT_FIT,
    },
)
TAG_REQUEST = inline_serializer("JobTag", {"value": serializers.CharField(help_text="the tag, without commas")})
TAG_DONE = inline_serializer("TagDone", {"status": serializers.IntegerField(), "message": serializers.CharField()})
EXECUTION_REQUEST = inline_serializer("ExecutionType", {"value": serializers.ChoiceField(["STOP", "START"])})
TAIL_BYTES = 64 * 1024


def is_post(view: APIView) -> bool:
    """Submit and list share a path: POST parses config text and counts against the submit rate."""
    request = getattr(view, "request", None)  # absent while drf-spectacular builds the schema
    return request is not None and request.method == "POST"


def accepted(message: str) -> Response:
    return Response({"status": 202, "message": message}, status=202)


def sweep_accepted(request: Request, sweep: Sweep) -> Response:
    """A sweep's submit answer (v1's routes and v2's): 202 naming it and its runs."""
    user = request.user.get_username()
    response = accepted(f"Created sweep {sweep.name} with {sweep.runs.count()} runs for user {user}.")
    response.data["sweep"] = sweep.full_name
    return response


class JobsView(APIView):
    """`GET` the job list, `POST` a job config (v2 YAML, or JSON: v1 configs are accepted too)."""

    def get_parsers(self):
        return [ConfigTextParser()] if is_post(self) else super().get_parsers()

    def get_throttles(self):
        return [SubmitThrottle()] if is_post(self) else [ListThrottle()]

    @extend_schema(operation_id="v2_jobs_list", parameters=common.LIST_PARAMETERS, responses={200: OpenApiTypes.OBJECT})
    def get(self, request: Request) -> HttpResponse:
        return common.job_list(request, request.query_params)

    @extend_schema(
        request={
            "text/yaml": OpenApiTypes.STR,
            "text/plain": OpenApiTypes.STR,
            "application/json": OpenApiTypes.OBJECT,
        },
        responses={202: SUBMITTED},
    )
    def post(self, request: Request) -> HttpResponse:
        """Submit a job. A job that can never run on the cluster as it is is still accepted, and the
        answer holds a `warning` naming the field to change and why."""
        job = common.submit(request)
        if isinstance(job, Sweep):
            return sweep_accepted(request, job)
        message = f"Update job {job.name} for user {request.user.get_username()} successfully."
        answer: dict[str, Any] = {"status": 202, "message": message}
        warning = common.cannot_fit_warning(job)
        if warning:
            answer["warning"] = warning
        return shapes.json_answer(answer, status=202)


class JobDetailView(APIView):
    @extend_schema(parameters=[common.JOB_NAME_PARAMETER], responses={200: OpenApiTypes.OBJECT})
    def get(self, request: Request, full_name: str) -> HttpResponse:
        return shapes.json_answer(common.detail(request, common.find_job_summary(request, full_name)))


class ExecutionTypeView(APIView):
    @extend_schema(parameters=[common.JOB_NAME_PARAMETER], request=EXECUTION_REQUEST, responses={202: ACCEPTED})
    def put(self, request: Request, full_name: str) -> Response:
        job = common.find_job_to_change(request, full_name, common.EXECUTE_VERB)
        return accepted(common.execute(request, job))


PRIORITY_REQUEST = inline_serializer(
    "JobPriorityClass", {"value": serializers.ChoiceField(["crit", "prod", "test", "oppo"])}
)


class JobPriorityView(APIView):
    """`PUT /api/v2/jobs/<user>~<job>/jobPriority {"value": "prod"}`: a waiting job's priority
    class (the owner and admins; checked against its VC as at submit)."""

    @extend_schema(parameters=[common.JOB_NAME_PARAMETER], request=PRIORITY_REQUEST, responses={200: TAG_DONE})
    def put(self, request: Request, full_name: str) -> Response:
        job = common.find_job_to_change(request, full_name, text_of("api.verb.change_class"))
        value = request.data.get("value") if hasattr(request.data, "get") else None
        job = actions.change_priority_class(job, request.user, value)
        return Response({"status": 200, "message": f"Job {full_name} now has priority class {job.priority_class}."})


class JobConfigView(APIView):
    """The submitted config as text, every secret value replaced by `******`."""

    @extend_schema(parameters=[common.JOB_NAME_PARAMETER], responses={(200, "text/yaml"): OpenApiTypes.STR})
    def get(self, request: Request, full_name: str) -> HttpResponse:
        job = common.find_job(request, full_name)
        content_type = config_media_type(job.protocol_version)
        return HttpResponse(common.masked_config(job), content_type=f"{content_type}; charset=utf-8")


class JobSshView(APIView):
    @extend_schema(parameters=[common.JOB_NAME_PARAMETER], responses={200: OpenApiTypes.OBJECT})
    def get(self, request: Request, full_name: str) -> Response:
        return Response(common.ssh_info(request, common.find_job(request, full_name)))


class JobTagView(APIView):
    """OpenPAI's `PUT|DELETE /api/v2/jobs/<user>~<job>/tag {"value": "<tag>"}`: the owner and admins."""

    def _tag_request(self, request: Request, full_name: str, verb: Text) -> tuple[Job, str]:
        job = common.find_job_to_change(request, full_name, verb)
        value = request.data.get("value") if hasattr(request.data, "get") else None
        if problem := actions.tag_error(value):
            raise ApiError(400, "InvalidParametersError", Message.of("api.tag.invalid", problem=problem), "value")
        return job, str(value)

    @extend_schema(parameters=[common.JOB_NAME_PARAMETER], request=TAG_REQUEST, responses={200: TAG_DONE})
    def put(self, request: Request, full_name: str) -> Response:
        job, value = self._tag_request(request, full_name, text_of("api.verb.add_tag"))
        actions.add_tag(job, value)
        return Response({"status": 200, "message": f"Add tag {value} for job {full_name} successfully."})

    @extend_schema(parameters=[common.JOB_NAME_PARAMETER], request=TAG_REQUEST, responses={200: TAG_DONE})
    def delete(self, request: Request, full_name: str) -> Response:
        job, value = self._tag_request(request, full_name, text_of("api.verb.delete_tag"))
        if not actions.remove_tag(job, value):
            raise ApiError(404, "NoTagError", Message.of("api.tag.not_found", tag=value, job=full_name))
        return Response({"status": 200, "message": f"Delete tag {value} from job {full_name} successfully."})


class JobEventsView(APIView):
    @extend_schema(
        parameters=[common.JOB_NAME_PARAMETER, OpenApiParameter("type", str, description="Normal or Warning")],
        responses={200: OpenApiTypes.OBJECT},
    )
    def get(self, request: Request, full_name: str) -> Response:
        job = common.find_job_summary(request, full_name)
        items = [shapes.event_item(event) for event in job.events.all()]
        if wanted := request.query_params.get("type"):
            items = [item for item in items if item["type"] == wanted]
        return Response({"totalCount": len(items), "data": items})


class TaskLogsView(APIView):
    """`…/attempts/<a>/taskRoles/<role>/taskIndex/<i>/attempts/<ta>/logs` -> `{locations: [{name, uri}]}`."""

    @extend_schema(
        parameters=[common.JOB_NAME_PARAMETER, OpenApiParameter("tail-mode", bool)],
        responses={200: OpenApiTypes.OBJECT},
    )
    def get(
        self, request: Request, full_name: str, job_attempt: int, role: str, index: int, task_attempt: int
    ) -> Response:
        job = common.find_job(request, full_name)
        tail = request.query_params.get("tail-mode") == "true"
        # An ended attempt has its own log; the attempt running now (or not started) is the task's.
        ended = job.attempts.filter(
            job_attempt=job_attempt + 1, role=role, index=index, attempt=task_attempt + 1
        ).first()
        task = job.tasks.filter(role=role, index=index).first()
        run: Task | TaskAttempt
        if ended is not None:
            run = ended
        elif task is not None and (job_attempt, task_attempt) == current_attempts(job, task):
            run = task
        else:
            missing = Message.of(
                "api.log.no_attempt",
                job_attempt=job_attempt,
                task_attempt=task_attempt,
                role=role,
                index=index,
                job=full_name,
            )
            raise ApiError(404, "NoTaskLogError", missing)
        locations = [
            {"name": stream, "uri": request.build_absolute_uri(links.log_link(run, tail, stream))}
            for stream in logs.log_streams(run.log_path)
        ]
        return Response({"locations": locations})


class TaskLogView(APIView):
    """Serves a task's log through a signed link (plain GET, no token), whole or its tail."""

    authentication_classes: list = []
    permission_classes = [AllowAny]

    @extend_schema(responses={(200, "text/plain"): OpenApiTypes.STR}, auth=[])
    def get(self, request: Request, token: str) -> HttpResponse | FileResponse | StreamingHttpResponse:
        found = links.log_for_link(token)
        if found is None:
            raise ApiError(404, "NoTaskLogError", Message.of("api.log.link_expired"))
        return log_response(found.run, found.tail, found.stream)


def current_attempts(job: Any, task: Task) -> tuple[int, int]:
    """(job attempt, task attempt) of the task now, 0-based as OpenPAI counts them."""
    return max(job.job_attempt - 1, 0), max(task.attempt - 1, 0)


def log_response(
    run: Task | TaskAttempt, tail: bool, stream: str
) -> HttpResponse | FileResponse | StreamingHttpResponse:
    """One stream of the log, whole or its last TAIL_BYTES, the job's secrets masked; empty before
    the task wrote any. A log with nothing to mask is the file itself, streamed off the request thread."""
    content_type = "text/plain; charset=utf-8"
    path = logs.stream_path(run.log_path, stream)
    if not path:
        return HttpResponse(b"", content_type=content_type)
    if tail:
        return HttpResponse(logs.masked_tail(run.job, path, TAIL_BYTES), content_type=content_type)
    if logs.secret_values(run.job):
        return StreamingHttpResponse(logs.masked_chunks(run.job, path), content_type=content_type)
    try:
        return FileResponse(Path(path).open("rb"), content_type=content_type)
    except OSError:
        return HttpResponse(b"", content_type=content_type)
