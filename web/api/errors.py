"""Every API failure becomes `{"code", "message", "errors", "field"}` (web.api.answers) with
OpenPAI's error codes and statuses.

The codes are those of OpenPAI's rest-server (src/rest-server/src/utils/error.js users), so
clients that branch on `code` keep working, and `message` is the English they read. `errors` says
the same as catalogue messages (a config's mistakes one each, any other refusal one with its
`api.*` code, web/api/texts.json).
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
from catalogue import Message, Text, all_texts, text_of
from jobs import actions
from jobs.protocol import JobConfigError
from web.api.answers import Answer, answer, entry

logger = logging.getLogger(__name__)


def validated(form: type[serializers.Serializer], data: Any) -> Any:
    """The request's body as `form` checks it (its validated_data); else a 400, as below."""
    checked = form(data=data)
    checked.is_valid(raise_exception=True)
    return checked.validated_data


class ApiError(exceptions.APIException):
    """An error with an explicit OpenPAI code and its message from the catalogue:
    raise ApiError(404, "NoJobError", Message.of("api.job.not_found", job=full_name)) (`field`: the one at fault)."""

    def __init__(self, status_code: int, code: str, message: Message, field: str = ""):
        if not isinstance(message, Message):
            raise TypeError(f"ApiError({code}): a catalogue Message (web/api/texts.json), not {message!r}")
        super().__init__(detail=message.text, code=code)
        self.status_code = status_code
        self.answer = answer(status_code, code, message, field)


class FieldErrors(Protocol):
    def as_dicts(self) -> list[dict[str, Any]]: ...


class ApiConfigError(ApiError):
    """An ApiError that lists a config's field errors, as a JobConfigError's answer does
    (`errors: [{field, message, code, params}]`, `field`: the first's): a JobConfigError's, or
    another form's (an alert rule's, scheduling.alerts.RuleError); `english`: their lines."""

    def __init__(self, status_code: int, code: str, english: str, error: FieldErrors):
        exceptions.APIException.__init__(self, detail=english, code=code)
        self.status_code = status_code
        self.answer = Answer(status_code, code, english, error.as_dicts())


def no_job(full_name: str) -> ApiError:
    return ApiError(404, "NoJobError", Message.of("api.job.not_found", job=full_name))


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


def _detail_entries(detail: Any, field: str = "") -> list[dict[str, Any]]:
    """DRF's field errors ({field: [problem]}, nested) as `errors`, each naming its dotted field."""
    if isinstance(detail, dict):
        return [
            found
            for key, value in detail.items()
            for found in _detail_entries(value, f"{field}.{key}" if field else str(key))
        ]
    if isinstance(detail, list):
        return [found for item in detail for found in _detail_entries(item, field)]
    return [entry(Message.of("api.invalid", said=str(detail)), field)]


def _said(exc: exceptions.APIException, words: Text) -> Message:
    """What a DRF exception says: its own message where it carries one (`message`, as
    web.api.auth's refusals do, or a permission's `code`, a catalogue code DRF passes on as the
    detail's), else `words` with DRF's own words as `said`."""
    own = getattr(exc, "message", None)
    if isinstance(own, Message):
        return own
    code = getattr(exc.detail, "code", None)
    text = all_texts().get(code) if isinstance(code, str) else None
    if text is not None and not text.names:
        return text()
    return words(said=_flatten_detail(exc.detail))


def _domain_error(exc: Exception, context: dict[str, Any]) -> Answer | None:
    """Errors of jobs.protocol / jobs.actions / accounts.groups."""
    if isinstance(exc, actions.VirtualClusterForbidden):
        return Answer(403, "ForbiddenUserError", protocol_message(exc.errors, str(exc)), exc.as_dicts())
    if isinstance(exc, actions.UnknownVirtualCluster):
        return Answer(404, "NoVirtualClusterError", protocol_message(exc.errors, str(exc)), exc.as_dicts())
    if isinstance(exc, JobConfigError):
        return Answer(400, bad_request_code(context), protocol_message(exc.errors, str(exc)), exc.as_dicts())
    if isinstance(exc, actions.JobNameConflict):
        return answer(409, "ConflictJobError", exc.message, exc.field)
    if isinstance(exc, actions.JobStateError):
        return Answer(400, "InvalidParametersError", str(exc), exc.as_dicts())
    if isinstance(exc, GroupProblem):
        return Answer(exc.status, exc.code, str(exc), [entry(exc.message, exc.field)])
    return None


def classify(exc: Exception, context: dict[str, Any]) -> Answer | None:
    """The answer to an exception, or None for a bug (a 500). Domain errors come before the
    framework's, and DRF's own catch-all APIException last."""
    if isinstance(exc, ApiError):
        return exc.answer
    return _domain_error(exc, context) or _django_error(exc, context) or _framework_error(exc, context)


def _framework_error(exc: Exception, context: dict[str, Any]) -> Answer | None:
    """DRF's exceptions: authentication, throttling, parsing, content negotiation."""
    if isinstance(exc, exceptions.NotAuthenticated):
        return answer(401, "UnauthorizedUserError", Message.of("api.auth.required"))
    if isinstance(exc, exceptions.AuthenticationFailed):
        return answer(401, "UnauthorizedUserError", _said(exc, text_of("api.auth.failed")))
    if isinstance(exc, exceptions.PermissionDenied):
        return answer(403, "ForbiddenUserError", _said(exc, text_of("api.auth.forbidden")))
    if isinstance(exc, exceptions.Throttled):
        wait = getattr(exc, "wait", None) or 1
        return answer(429, "TooManyRequestsError", Message.of("api.throttled", seconds=f"{wait:.0f}"))
    if isinstance(exc, exceptions.ValidationError):
        return Answer(400, "InvalidParametersError", _flatten_detail(exc.detail), _detail_entries(exc.detail))
    if isinstance(exc, exceptions.ParseError):
        return answer(400, bad_request_code(context), _said(exc, text_of("api.unreadable")))
    if isinstance(exc, exceptions.UnsupportedMediaType):
        return answer(415, "InvalidParametersError", unsupported_type_message(context))
    if isinstance(exc, exceptions.MethodNotAllowed):
        return answer(405, "NoApiError", _said(exc, text_of("api.method_not_allowed")))
    if isinstance(exc, exceptions.NotAcceptable):
        return answer(406, "InvalidParametersError", _said(exc, text_of("api.not_acceptable")))
    if isinstance(exc, exceptions.NotFound):
        return answer(404, "NoApiError", Message.of("api.no_such_api"))
    if isinstance(exc, exceptions.APIException):
        return answer(exc.status_code, "UnknownError", _said(exc, text_of("api.failed")))
    return None


def unsupported_type_message(context: dict[str, Any]) -> Message:
    """What this route reads, named: `Send ... as application/json (or ...)`."""
    request = context.get("request")
    sent = (getattr(request, "content_type", "") or "").split(";")[0].strip() or "(none)"
    accepted = [parser.media_type for parser in getattr(request, "parsers", None) or []]
    if not accepted:
        return Message.of("api.body.reads_none", sent=sent)
    if accepted[1:]:
        return Message.of("api.body.send_as_one_of", accepted=accepted[0], others=accepted[1:], sent=sent)
    return Message.of("api.body.send_as", accepted=accepted[0], sent=sent)


def _django_error(exc: Exception, context: dict[str, Any]) -> Answer | None:
    """Django's exceptions: a missing page or object, a hostile request, a busy database."""
    if isinstance(exc, Http404):
        return answer(404, "NoApiError", Message.of("api.no_such_api"))
    if isinstance(exc, ObjectDoesNotExist):
        return answer(404, "NoJobError", Message.of("api.job.missing"))
    if isinstance(exc, RequestDataTooBig):
        return answer(413, bad_request_code(context), Message.of("api.body.too_big"))
    if isinstance(exc, SuspiciousOperation):
        said = str(exc)
        return answer(
            400,
            bad_request_code(context),
            Message.of("api.refused_request", said=said) if said else Message.of("api.bad_request"),
        )
    if isinstance(exc, IntegrityError):
        return answer(409, "ConflictJobError", Message.of("api.job.name_taken"))
    if isinstance(exc, OperationalError | DatabaseError):
        logger.warning("database busy answering %s: %s", context.get("request"), exc)
        return answer(503, "UnknownError", Message.of("api.database_busy"))
    return None


def openpai_exception_handler(exc: Exception, context: dict[str, Any]) -> Response:
    # (imported here: rest_framework.views loads the API settings' parsers, which import this
    # module; imported at the top, whichever of the two came first found the other half made)
    from rest_framework.views import set_rollback

    set_rollback()
    found = classify(exc, context)
    if found is None:
        logger.exception("unexpected API error", exc_info=exc)
        found = answer(status.HTTP_500_INTERNAL_SERVER_ERROR, "UnknownError", Message.of("api.internal"))
    response = Response(found.body(), status=found.status)
    wait = getattr(exc, "wait", None)
    if isinstance(exc, exceptions.Throttled) and wait is not None:
        response["Retry-After"] = str(int(wait) + 1)
    if found.status == 401:
        response["WWW-Authenticate"] = 'Bearer realm="api"'
    return response
