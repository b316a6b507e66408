"""`Authorization: Bearer <token>` authentication against accounts.Token (stored hashed), and the
browser's session with its CSRF check."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.http import QueryDict
from drf_spectacular.authentication import SessionScheme
from drf_spectacular.extensions import OpenApiAuthenticationExtension
from rest_framework import exceptions
from rest_framework.authentication import BaseAuthentication, SessionAuthentication, get_authorization_header
from rest_framework.permissions import BasePermission
from rest_framework.request import Request

from accounts.models import Token
from accounts.permissions import is_admin
from accounts.tokens import find_valid_token
from catalogue import Message, text_of


class TokenRefused(exceptions.AuthenticationFailed):
    """A Bearer token refused, saying why as a catalogue message (web.api.errors answers it)."""

    def __init__(self, message: Message) -> None:
        super().__init__(message.text)
        self.message = message


class BearerTokenAuthentication(BaseAuthentication):
    keyword = b"bearer"

    def authenticate(self, request: Request) -> tuple[Any, Token] | None:
        parts = get_authorization_header(request).split()
        if not parts or parts[0].lower() != self.keyword:
            return None  # not ours: the session may still authenticate the request
        if len(parts) != 2:
            raise TokenRefused(Message.of("api.auth.bearer_only"))
        try:
            raw = parts[1].decode("ascii")
        except UnicodeDecodeError as error:
            raise TokenRefused(Message.of("api.auth.token_invalid")) from error
        token = find_valid_token(raw)
        if token is None:
            raise TokenRefused(Message.of("api.auth.token_refused"))
        return token.user, token

    def authenticate_header(self, request: Request) -> str:
        return 'Bearer realm="api"'


class SessionWithCsrf(SessionAuthentication):
    """DRF's session authentication, whose CSRF check looks for the form field only in a form: a
    submit route's body is the config text even when sent as a form (curl's default type), and
    the check's `request.POST.get` on that text was a 500. The X-CSRFToken header always counts."""

    def enforce_csrf(self, request: Request) -> None:
        super().enforce_csrf(_FormFieldsOnly(request))  # type: ignore[arg-type]


class _FormFieldsOnly:
    """The request as Django's CSRF check reads it, with `POST` empty unless the body is form fields."""

    def __init__(self, request: Request) -> None:
        self.request = request

    def __getattr__(self, name: str) -> Any:
        return getattr(self.request, name)

    @property
    def POST(self) -> QueryDict:  # (Django's name)
        fields = self.request.POST
        return fields if isinstance(fields, QueryDict) else QueryDict()


def is_application_token(request: Request) -> bool:
    return isinstance(request.auth, Token) and request.auth.kind == Token.Kind.APPLICATION


class IsAdminNotApplicationToken(BasePermission):
    """Admin-only operations: an admin user, and never through an application token."""

    message, code = (
        text_of("api.auth.admin_needed").template,
        "api.auth.admin_needed",
    )  # (DRF's refusal carries the code)

    def has_permission(self, request: Request, view: Any) -> bool:
        return is_admin(request.user) and not is_application_token(request)


class NotApplicationToken(BasePermission):
    """Managing tokens needs a login token or the session: a script's token cannot mint more."""

    message, code = text_of("api.auth.no_application_token").template, "api.auth.no_application_token"

    def has_permission(self, request: Request, view: Any) -> bool:
        return not is_application_token(request)


class DocsReader(BasePermission):
    """The schema and API docs need a sign-in, like every page, unless PAI_API_DOCS_PUBLIC."""

    def has_permission(self, request: Request, view: Any) -> bool:
        return bool(settings.PAI_API_DOCS_PUBLIC or request.user.is_authenticated)


class BearerTokenScheme(OpenApiAuthenticationExtension):
    """Describes the Bearer token in the OpenAPI schema."""

    target_class = "web.api.auth.BearerTokenAuthentication"
    name = "bearerToken"

    def get_security_definition(self, auto_schema: Any) -> dict[str, str]:
        return {"type": "http", "scheme": "bearer", "description": "A token from /api/v2/authn/basic/login."}


class SessionWithCsrfScheme(SessionScheme):
    """The browser's session in the OpenAPI schema, as DRF's own is described."""

    target_class = "web.api.auth.SessionWithCsrf"
