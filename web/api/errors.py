"""Every API failure becomes `{"code", "message"}` with OpenPAI's error codes and statuses.

The codes are those of OpenPAI's rest-server (src/rest-server/src/utils/error.js users), so
clients that branch on `code` keep working.
"""

from __future__ import annotations

import logging
from typing import Any, Protocol

from django.core.exceptions import ObjectDoesNotExist, RequestDataTooBig, SuspiciousOperation
from django.db import DatabaseError, IntegrityError, OperationalError
from django.http import Http404
from rest_framework import exceptions, serializers, status
from rest_framework.response import Response

from accounts.groups import GroupProblem
from jobs import actions
from jobs.protocol import JobConfigError

logger = logging.getLogger(__name__)


def validated(form: type[serializers.Serializer], data: Any) -> Any:
    """The request's body as `form` checks it (its validated_data); else a 400, as below."""
    checked = form(data=data)
    checked.is_valid(raise_exception=True)
    return checked.validated_data


class ApiError(exceptions.APIException):
    """An error with an explicit OpenPAI code: raise ApiError(404, "NoJobError", "...")."""

    def __init__(self, status_code: int, code: str, message: str):
        super().__init__(detail=message, code=code)
        self.status_code = status_code
        self.openpai_code = code
        self.message = message


class FieldErrors(Protocol):
    def as_dicts(self) -> list[dict[str, Any]]: ...


class ApiConfigError(ApiError):
    """An ApiError that also lists a config's field errors, as a JobConfigError's answer does
    (`errors: [{field, message, code, params}]`, `field`: the first's): a JobConfigError's, or
    another form's (an alert rule's, scheduling.alerts.RuleError)."""

    def __init__(self, status_code: int, code: str, message: str, error: FieldErrors):
        super().__init__(status_code, code, message)
        self.error = error

    def as_dicts(self) -> list[dict[str, Any]]:
        return self.error.as_dicts()


# OpenPAI 0.x answered some reads anonymously; the portal never does, and says what to do instead.
HOW_TO_AUTHENTICATE = (
    "This API needs a token (the portal answers no anonymous reads): get one with "
    'POST /api/v2/authn/basic/login {"username": ..., "password": ...} (or POST /api/v1/token), '
    "or create an application token on the profile page, then send `Authorization: Bearer <token>`."
)


def no_job(full_name: str) -> ApiError:
    return ApiError(404, "NoJobError", f"Job {full_name} is not found.")


API_ALIAS_PREFIX = "/rest-server"  # OpenPAI's clients reach the REST server behind its proxy there


def is_v1_path(path: str) -> bool:
    return path.removeprefix(API_ALIAS_PREFIX).startswith("/api/v1/")


def is_v1_request(context: dict[str, Any]) -> bool:
    request = context.get("request")
    return bool(request is not None and is_v1_path(request.path))


def bad_request_code(context: dict[str, Any]) -> str:
    """v1 routes answer InvalidParametersError, v2 routes InvalidProtocolError (as OpenPAI does)."""
    return "InvalidParametersError" if is_v1_request(context) else "InvalidProtocolError"


def protocol_message(errors: list[tuple[str, str]] | list[Any], fallback: str) -> str:
    """Every `field: problem` on its own line, so one answer lists all mistakes."""
    lines = []
    for item in errors or []:
        if isinstance(item, tuple | list) and len(item) == 2:
            lines.append(f"{item[0]}: {item[1]}" if item[0] else str(item[1]))
        else:
            lines.append(str(item))
    return "\n".join(lines) or fallback


def _flatten_detail(detail: Any) -> str:
    if isinstance(detail, dict):
        return "; ".join(f"{key}: {_flatten_detail(value)}" for key, value in detail.items())
    if isinstance(detail, list):
        return "; ".join(_flatten_detail(item) for item in detail)
    return str(detail)


Classified = tuple[int, str, str]  # (HTTP status, OpenPAI code, message)


def _domain_error(exc: Exception, context: dict[str, Any]) -> Classified | None:
    """Errors of jobs.protocol / jobs.actions."""
    if isinstance(exc, actions.VirtualClusterForbidden):
        return 403, "ForbiddenUserError", protocol_message(exc.errors, str(exc))
    if isinstance(exc, actions.UnknownVirtualCluster):
        return 404, "NoVirtualClusterError", protocol_message(exc.errors, str(exc))
    if isinstance(exc, JobConfigError):
        return 400, bad_request_code(context), protocol_message(exc.errors, str(exc))
    if isinstance(exc, actions.JobNameConflict):
        return 409, "ConflictJobError", str(exc) or "The job name is already taken."
    if isinstance(exc, actions.JobStateError):
        return 400, "InvalidParametersError", str(exc)
    if isinstance(exc, GroupProblem):
        return exc.status, exc.code, str(exc)
    return None


def classify(exc: Exception, context: dict[str, Any]) -> Classified | None:
    """The answer to an exception, or None for a bug (a 500). Domain errors come before the
    framework's, and DRF's own catch-all APIException last."""
    if isinstance(exc, ApiError):
        return exc.status_code, exc.openpai_code, exc.message
    return _domain_error(exc, context) or _django_error(exc, context) or _framework_error(exc, context)


def _framework_error(exc: Exception, context: dict[str, Any]) -> Classified | None:
    """DRF's exceptions: authentication, throttling, parsing, content negotiation."""
    if isinstance(exc, exceptions.NotAuthenticated):
        return 401, "UnauthorizedUserError", HOW_TO_AUTHENTICATE
    if isinstance(exc, exceptions.AuthenticationFailed):
        return 401, "UnauthorizedUserError", str(exc.detail)
    if isinstance(exc, exceptions.PermissionDenied):
        return 403, "ForbiddenUserError", str(exc.detail)
    if isinstance(exc, exceptions.Throttled):
        wait = getattr(exc, "wait", None) or 1
        return 429, "TooManyRequestsError", f"Too many requests; retry in {wait:.0f} s."
    if isinstance(exc, exceptions.ParseError | exceptions.ValidationError):
        code = "InvalidParametersError" if isinstance(exc, exceptions.ValidationError) else bad_request_code(context)
        return 400, code, _flatten_detail(exc.detail)
    if isinstance(exc, exceptions.UnsupportedMediaType):
        return 415, "InvalidParametersError", unsupported_type_message(context)
    if isinstance(exc, exceptions.MethodNotAllowed):
        return 405, "NoApiError", str(exc.detail)
    if isinstance(exc, exceptions.NotAcceptable):
        return 406, "InvalidParametersError", str(exc.detail)
    if isinstance(exc, exceptions.NotFound):
        return 404, "NoApiError", "The requested API or object does not exist."
    if isinstance(exc, exceptions.APIException):
        return exc.status_code, "UnknownError", _flatten_detail(exc.detail)
    return None


def unsupported_type_message(context: dict[str, Any]) -> str:
    """What this route reads, named: `Send ... as application/json (or ...)`."""
    request = context.get("request")
    sent = (getattr(request, "content_type", "") or "").split(";")[0].strip() or "(none)"
    accepted = [parser.media_type for parser in getattr(request, "parsers", None) or []]
    if not accepted:
        return f"This route reads no body (Content-Type {sent})."
    others = f" (or {', '.join(accepted[1:])})" if accepted[1:] else ""
    return f"Send the body as {accepted[0]}{others}; Content-Type {sent} is not read here."


def _django_error(exc: Exception, context: dict[str, Any]) -> Classified | None:
    """Django's exceptions: a missing page or object, a hostile request, a busy database."""
    if isinstance(exc, Http404):
        return 404, "NoApiError", "The requested API or object does not exist."
    if isinstance(exc, ObjectDoesNotExist):
        return 404, "NoJobError", "The job is not found."
    if isinstance(exc, RequestDataTooBig):
        return 413, bad_request_code(context), "The request body is too large."
    if isinstance(exc, SuspiciousOperation):
        return 400, bad_request_code(context), str(exc) or "Bad request."
    if isinstance(exc, IntegrityError):
        return 409, "ConflictJobError", "The job name is already taken."
    if isinstance(exc, OperationalError | DatabaseError):
        logger.warning("database busy answering %s: %s", context.get("request"), exc)
        return 503, "UnknownError", "The database is busy; please retry."
    return None


def error_response(status_code: int, code: str, message: str) -> Response:
    return Response({"code": code, "message": message}, status=status_code)


def openpai_exception_handler(exc: Exception, context: dict[str, Any]) -> Response:
    # (imported here: rest_framework.views loads the API settings' parsers, which import this
    # module; imported at the top, whichever of the two came first found the other half made)
    from rest_framework.views import set_rollback

    set_rollback()
    found = classify(exc, context)
    if found is None:
        logger.exception("unexpected API error", exc_info=exc)
        found = (status.HTTP_500_INTERNAL_SERVER_ERROR, "UnknownError", "Internal server error.")
    status_code, code, message = found
    response = error_response(status_code, code, message)
    if status_code < 500 and callable(getattr(exc, "as_dicts", None)):
        # The protocol's field errors, each {field, message, code, params}; `field` names the first.
        errors = exc.as_dicts()  # type: ignore[attr-defined]
        response.data["errors"] = errors
        response.data["field"] = errors[0]["field"] if errors else ""
    wait = getattr(exc, "wait", None)
    if isinstance(exc, exceptions.Throttled) and wait is not None:
        response["Retry-After"] = str(int(wait) + 1)
    if status_code == 401:
        response["WWW-Authenticate"] = 'Bearer realm="api"'
    return response
