"""`/api/v1/...`: the legacy JSON job routes older OpenPAI clients call."""

from __future__ import annotations

import json

from django.http import HttpResponse
from django.urls import reverse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework.permissions import AllowAny
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from catalogue import Message
from jobs import actions
from jobs.models import Job, Sweep
from jobs.ssh import job_private_key, key_filename
from web.api import links
from web.api.errors import ApiError
from web.api.parsers import ConfigTextParser
from web.api.throttles import ListThrottle, SubmitThrottle
from web.api.views import common
from web.api.views.jobs_v2 import ACCEPTED, EXECUTION_REQUEST, accepted, is_post, sweep_accepted

USER_PARAMETER = OpenApiParameter("username", OpenApiTypes.STR, OpenApiParameter.PATH)
JOB_PARAMETER = OpenApiParameter("job_name", OpenApiTypes.STR, OpenApiParameter.PATH)


def v1_full_name(username: str, job_name: str) -> str:
    return f"{username}~{job_name}"


def created(request: Request, job: Job | Sweep) -> Response:
    """201 with Location and the job's detail (the job exists as soon as submit returns), and a
    `warning` when the job can never run on the cluster as it is (as v2's answer); a sweep (a
    portal extra OpenPAI's v1 clients never send) is answered as v2 answers it."""
    if isinstance(job, Sweep):
        return sweep_accepted(request, job)
    location = reverse("api-v1-user-job", kwargs={"username": job.owner.get_username(), "job_name": job.name})
    body = common.detail(request, job)
    warning = common.cannot_fit_warning(job)
    if warning:
        body["warning"] = warning
    response = Response(body, status=201)
    response["Location"] = request.build_absolute_uri(location)
    return response


class V1JobsMixin(APIView):
    def get_parsers(self):
        return [ConfigTextParser()] if is_post(self) else super().get_parsers()

    def get_throttles(self):
        return [SubmitThrottle()] if is_post(self) else [ListThrottle()]


class V1JobsView(V1JobsMixin):
    """`GET /api/v1/jobs?username=` (a plain array) and `POST /api/v1/jobs` (v1 JSON)."""

    @extend_schema(
        operation_id="v1_jobs_list",
        parameters=[OpenApiParameter("username", str)],
        responses={200: OpenApiTypes.OBJECT},
    )
    def get(self, request: Request) -> HttpResponse:
        params = {"username": request.query_params.get("username", ""), "limit": str(common.DEFAULT_LIST_LIMIT)}
        return common.job_list(request, params)

    @extend_schema(request={"application/json": OpenApiTypes.OBJECT}, responses={201: OpenApiTypes.OBJECT})
    def post(self, request: Request) -> Response:
        return created(request, common.submit(request))


class V1UserJobsView(V1JobsMixin):
    """`GET|POST /api/v1/user/<user>/jobs`: only as that user (admins may list anyone's)."""

    @extend_schema(operation_id="v1_user_jobs_list", parameters=[USER_PARAMETER], responses={200: OpenApiTypes.OBJECT})
    def get(self, request: Request, username: str) -> HttpResponse:
        return common.job_list(request, {"username": username, "limit": str(common.DEFAULT_LIST_LIMIT)})

    @extend_schema(
        parameters=[USER_PARAMETER],
        request={"application/json": OpenApiTypes.OBJECT},
        responses={201: OpenApiTypes.OBJECT},
    )
    def post(self, request: Request, username: str) -> Response:
        if username != request.user.get_username():
            refused = Message.of("api.job.submit_as_other", user=request.user.get_username(), other=username)
            raise ApiError(403, "ForbiddenUserError", refused)
        return created(request, common.submit(request))


class V1JobDetailView(APIView):
    """`GET` the detail, `DELETE` stops the job (202)."""

    @extend_schema(parameters=[USER_PARAMETER, JOB_PARAMETER], responses={200: OpenApiTypes.OBJECT})
    def get(self, request: Request, username: str, job_name: str) -> Response:
        return Response(common.detail(request, common.find_job_summary(request, v1_full_name(username, job_name))))

    @extend_schema(parameters=[USER_PARAMETER, JOB_PARAMETER], request=None, responses={202: ACCEPTED})
    def delete(self, request: Request, username: str, job_name: str) -> Response:
        job = common.find_job(request, v1_full_name(username, job_name))
        common.check_may_act_on(request, job)
        if job.is_finished:
            return accepted(f"Job {job.full_name} has already finished ({job.state}).")
        actions.stop_job(job, request.user)
        return accepted(f"Deleted job {job.full_name} successfully.")


class V1ExecutionTypeView(APIView):
    @extend_schema(parameters=[USER_PARAMETER, JOB_PARAMETER], request=EXECUTION_REQUEST, responses={202: ACCEPTED})
    def put(self, request: Request, username: str, job_name: str) -> Response:
        job = common.find_job_to_change(request, v1_full_name(username, job_name), common.EXECUTE_VERB)
        return accepted(common.execute(request, job))


class V1JobConfigView(APIView):
    """The submitted JSON (secrets as `******`); a v2 YAML submission comes back as its text."""

    @extend_schema(parameters=[USER_PARAMETER, JOB_PARAMETER], responses={200: OpenApiTypes.OBJECT})
    def get(self, request: Request, username: str, job_name: str) -> Response | HttpResponse:
        job = common.find_job(request, v1_full_name(username, job_name))
        text = common.masked_config(job)
        try:
            return Response(json.loads(text))
        except ValueError:
            return HttpResponse(text, content_type="text/yaml; charset=utf-8")


class V1JobSshView(APIView):
    """`{containers: [{id, sshIp, sshPort}], keyPair: {..., privateKeyDirectDownloadLink}}`."""

    @extend_schema(parameters=[USER_PARAMETER, JOB_PARAMETER], responses={200: OpenApiTypes.OBJECT})
    def get(self, request: Request, username: str, job_name: str) -> Response:
        job = common.find_job(request, v1_full_name(username, job_name))
        return Response(common.ssh_info(request, job))


class V1OwnJobSshView(APIView):
    """`GET /api/v1/jobs/<job>/ssh`: OpenPAI 0.x's path, naming one of the caller's own jobs."""

    @extend_schema(parameters=[JOB_PARAMETER], responses={200: OpenApiTypes.OBJECT})
    def get(self, request: Request, job_name: str) -> Response:
        job = common.find_job(request, v1_full_name(request.user.get_username(), job_name))
        return Response(common.ssh_info(request, job))


class SshKeyDownloadView(APIView):
    """The job's private key through a signed link: a few minutes, that one key, no token needed."""

    authentication_classes: list = []
    permission_classes = [AllowAny]

    @extend_schema(responses={(200, "application/octet-stream"): OpenApiTypes.BINARY}, auth=[])
    def get(self, request: Request, token: str) -> HttpResponse:
        job = links.job_for_ssh_key_link(token)
        if job is None:
            raise ApiError(403, "ForbiddenUserError", Message.of("api.auth.key_link_expired"))
        response = HttpResponse(job_private_key(job), content_type="application/octet-stream")
        response["Content-Disposition"] = f'attachment; filename="{key_filename(job)}"'
        response["Cache-Control"] = "no-store"
        return response
