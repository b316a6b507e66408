"""`/api/v2/jobs`: OpenPAI's v2 job routes (submit YAML, list, detail, execution, config, ssh, events, logs)."""

from __future__ import annotations

from django.http import HttpResponse, StreamingHttpResponse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema, inline_serializer
from rest_framework import serializers
from rest_framework.permissions import AllowAny
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from jobs import logs
from jobs.api import links, shapes
from jobs.api.errors import ApiError
from jobs.api.parsers import ConfigTextParser
from jobs.api.throttles import ListThrottle, SubmitThrottle
from jobs.api.views import common
from jobs.models import Task

ACCEPTED = inline_serializer("Accepted", {"status": serializers.IntegerField(), "message": serializers.CharField()})
EXECUTION_REQUEST = inline_serializer("ExecutionType", {"value": serializers.ChoiceField(["STOP", "START"])})
TAIL_BYTES = 64 * 1024


def is_post(view: APIView) -> bool:
    """Submit and list share a path: POST parses config text and counts against the submit rate."""
    request = getattr(view, "request", None)  # absent while drf-spectacular builds the schema
    return request is not None and request.method == "POST"


def accepted(message: str) -> Response:
    return Response({"status": 202, "message": message}, status=202)


class JobsView(APIView):
    """`GET` the job list, `POST` a job config (v2 YAML, or JSON: v1 configs are accepted too)."""

    def get_parsers(self):  # type: ignore[no-untyped-def]
        return [ConfigTextParser()] if is_post(self) else super().get_parsers()

    def get_throttles(self):  # type: ignore[no-untyped-def]
        return [SubmitThrottle()] if is_post(self) else [ListThrottle()]

    @extend_schema(operation_id="v2_jobs_list", parameters=common.LIST_PARAMETERS, responses={200: OpenApiTypes.OBJECT})
    def get(self, request: Request) -> Response:
        return Response(common.job_list(request, request.query_params))

    @extend_schema(
        request={
            "text/yaml": OpenApiTypes.STR,
            "text/plain": OpenApiTypes.STR,
            "application/json": OpenApiTypes.OBJECT,
        },
        responses={202: ACCEPTED},
    )
    def post(self, request: Request) -> Response:
        job = common.submit(request)
        return accepted(f"Update job {job.name} for user {request.user.get_username()} successfully.")


class JobDetailView(APIView):
    @extend_schema(parameters=[common.JOB_NAME_PARAMETER], responses={200: OpenApiTypes.OBJECT})
    def get(self, request: Request, full_name: str) -> Response:
        return Response(common.detail(request, common.find_job(request, full_name)))


class ExecutionTypeView(APIView):
    @extend_schema(parameters=[common.JOB_NAME_PARAMETER], request=EXECUTION_REQUEST, responses={202: ACCEPTED})
    def put(self, request: Request, full_name: str) -> Response:
        return accepted(common.execute(request, common.find_job(request, full_name)))


class JobConfigView(APIView):
    """The submitted config as text, every secret value replaced by `******`."""

    @extend_schema(parameters=[common.JOB_NAME_PARAMETER], responses={(200, "text/yaml"): OpenApiTypes.STR})
    def get(self, request: Request, full_name: str) -> HttpResponse:
        job = common.find_job(request, full_name)
        content_type = "text/yaml" if job.protocol_version == 2 else "application/json"
        return HttpResponse(common.masked_config(job), content_type=f"{content_type}; charset=utf-8")


class JobSshView(APIView):
    @extend_schema(parameters=[common.JOB_NAME_PARAMETER], responses={200: OpenApiTypes.OBJECT})
    def get(self, request: Request, full_name: str) -> Response:
        return Response(common.ssh_info(request, common.find_job(request, full_name)))


class JobEventsView(APIView):
    @extend_schema(parameters=[common.JOB_NAME_PARAMETER], responses={200: OpenApiTypes.OBJECT})
    def get(self, request: Request, full_name: str) -> Response:
        job = common.find_job(request, full_name)
        return Response({"data": [shapes.event_item(event) for event in job.events.all()]})


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
        task = job.tasks.filter(role=role, index=index).first()
        if task is None:
            raise ApiError(404, "NoTaskLogError", f"Task {role}-{index} of job {full_name} does not exist.")
        tail = request.query_params.get("tail-mode") == "true"
        uri = request.build_absolute_uri(links.task_log_path(task, tail=tail))
        return Response({"locations": [{"name": "all", "uri": uri}, {"name": "stdout", "uri": uri}]})


class TaskLogView(APIView):
    """Serves a task's log through a signed link (plain GET, no token), whole or its tail."""

    authentication_classes: list = []
    permission_classes = [AllowAny]

    @extend_schema(responses={(200, "text/plain"): OpenApiTypes.STR}, auth=[])
    def get(self, request: Request, token: str) -> HttpResponse | StreamingHttpResponse:
        found = links.task_for_log_link(token)
        if found is None:
            raise ApiError(404, "NoTaskLogError", "The log link is not valid or has expired.")
        task, tail = found
        return log_response(task, tail)


def log_response(task: Task, tail: bool) -> HttpResponse | StreamingHttpResponse:
    """The whole log streamed from disk, or its last TAIL_BYTES, the job's secrets masked; empty
    before the task wrote any."""
    content_type = "text/plain; charset=utf-8"
    if not task.log_path:
        return HttpResponse(b"", content_type=content_type)
    if tail:
        return HttpResponse(logs.masked_tail(task.job, task.log_path, TAIL_BYTES), content_type=content_type)
    return StreamingHttpResponse(logs.masked_chunks(task.job, task.log_path), content_type=content_type)
