"""Job and task attempts (OpenPAI's `/job-attempts`, `/attempts/<n>` and `…/taskIndex/<i>/attempts`,
which its job page calls on every refresh after a retry). Attempts count from 0, as in OpenPAI; an
ended task attempt is a TaskAttempt row, the one running now is the Task itself."""

from __future__ import annotations

from typing import Any

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from catalogue import Message
from jobs import actions
from jobs.models import Job, TaskAttempt
from web.api import links, shapes
from web.api.errors import ApiError
from web.api.views import common


def attempt_task_status(request: Request, job: Job, attempt: TaskAttempt) -> dict[str, Any]:
    ended = "SUCCEEDED" if attempt.exit_code == 0 else "FAILED"
    log = request.build_absolute_uri(links.log_link(attempt)) if actions.may_manage(request.user, job) else None
    return {
        "taskIndex": attempt.index,
        "taskState": ended,
        "attemptState": ended,
        "attemptId": attempt.attempt - 1,
        "containerId": attempt.executor_id or None,
        "containerIp": attempt.ip or None,
        "containerNodeName": attempt.node_name or None,
        "containerPorts": shapes.ports_by_label(attempt.ports),
        "containerGpus": shapes.gpu_bitmask(attempt.gpus),
        "containerLog": log,
        "containerExitCode": attempt.exit_code,
        "containerUserExitCode": attempt.user_exit_code,
        "containerExitSpec": shapes.exit_spec_row(attempt.exit_code),
        "containerExitDiagnostics": attempt.exit_diagnostics or None,
        "containerExitDiagnosticsMessages": shapes.diagnostics_messages(attempt),
        "currentAttemptCreatedTime": shapes.epoch_ms(attempt.started_at),
        "currentAttemptLaunchedTime": shapes.epoch_ms(attempt.started_at),
        "currentAttemptCompletedTime": shapes.epoch_ms(attempt.finished_at),
    }


def past_attempt_detail(request: Request, job: Job, index: int) -> dict[str, Any]:
    """A job attempt that has ended: each task as its last attempt in it left it."""
    last: dict[tuple[str, int], TaskAttempt] = {}
    for attempt in job.attempts.filter(job_attempt=index + 1).order_by("role", "index", "attempt"):
        last[(attempt.role, attempt.index)] = attempt
    roles: dict[str, Any] = {
        role: {"taskRoleStatus": {"name": role}, "taskStatuses": []} for role in job.normalized["taskRoles"]
    }
    for (role, _), attempt in sorted(last.items()):
        roles.setdefault(role, {"taskRoleStatus": {"name": role}, "taskStatuses": []})
        roles[role]["taskStatuses"].append(attempt_task_status(request, job, attempt))
    finished = [attempt.finished_at for attempt in last.values() if attempt.finished_at]
    failed = any(attempt.exit_code != 0 for attempt in last.values())
    status = {
        "username": job.owner.get_username(),
        "attemptId": index,
        "attemptState": "FAILED" if failed else "SUCCEEDED",
        "appCreatedTime": shapes.epoch_ms(min((a.started_at for a in last.values() if a.started_at), default=None)),
        "appCompletedTime": shapes.epoch_ms(max(finished, default=None)),
        "virtualCluster": job.virtual_cluster.name,
    }
    return {"name": job.name, "jobStatus": status, "taskRoles": roles}


def attempt_detail(request: Request, job: Job, index: int) -> dict[str, Any]:
    latest = max(job.job_attempt - 1, 0)
    if index == latest:
        return {**common.detail(request, job), "isLatest": True}
    if 0 <= index < latest:
        return {**past_attempt_detail(request, job, index), "attemptIndex": index, "isLatest": False}
    raise ApiError(404, "NoJobError", Message.of("api.job.no_attempt", job=job.full_name, attempt=index))


class JobAtAttemptView(APIView):
    """`GET /api/v2/jobs/<user>~<job>/attempts/<n>`: the job as attempt n left it."""

    @extend_schema(parameters=[common.JOB_NAME_PARAMETER], responses={200: OpenApiTypes.OBJECT})
    def get(self, request: Request, full_name: str, job_attempt: int) -> Response:
        return Response(attempt_detail(request, common.find_job_summary(request, full_name), job_attempt))


class JobAttemptsView(APIView):
    """`GET /api/v2/jobs/<user>~<job>/job-attempts`: every attempt, oldest first."""

    @extend_schema(
        operation_id="v2_job_attempts_list",
        parameters=[common.JOB_NAME_PARAMETER],
        responses={200: OpenApiTypes.OBJECT},
    )
    def get(self, request: Request, full_name: str) -> Response:
        job = common.find_job_summary(request, full_name)
        count = max(job.job_attempt, 1)
        return Response([{**attempt_detail(request, job, index), "attemptIndex": index} for index in range(count)])


class JobAttemptView(APIView):
    """`GET /api/v2/jobs/<user>~<job>/job-attempts/<n>`."""

    @extend_schema(parameters=[common.JOB_NAME_PARAMETER], responses={200: OpenApiTypes.OBJECT})
    def get(self, request: Request, full_name: str, job_attempt: int) -> Response:
        job = common.find_job_summary(request, full_name)
        return Response({**attempt_detail(request, job, job_attempt), "attemptIndex": job_attempt})


class TaskAttemptsView(APIView):
    """`GET …/attempts/<a>/taskRoles/<role>/taskIndex/<i>/attempts`: the task's attempts in job attempt a."""

    @extend_schema(parameters=[common.JOB_NAME_PARAMETER], responses={200: OpenApiTypes.OBJECT})
    def get(self, request: Request, full_name: str, job_attempt: int, role: str, index: int) -> Response:
        job = common.find_job_summary(request, full_name)
        ended = job.attempts.filter(job_attempt=job_attempt + 1, role=role, index=index).order_by("attempt")
        answer = [attempt_task_status(request, job, attempt) for attempt in ended]
        task = job.tasks.select_related("node").filter(role=role, index=index).first()
        if task is not None and task.attempt > 0 and task.finished_at is None and job_attempt == job.job_attempt - 1:
            answer.append(shapes.task_status(task, common.log_url(request, job)))
        return Response(answer)
