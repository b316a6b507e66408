"""Sign-in and tokens: v2 basic login/logout, legacy v1 token, application tokens, OpenPAI's
OpenID Connect login and logout (the flow itself is accounts/oidc.py's)."""

from __future__ import annotations

from typing import Any, cast

from django.conf import settings
from django.contrib.auth import authenticate, logout
from django.http import HttpResponseRedirect
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema, inline_serializer
from rest_framework import serializers
from rest_framework.permissions import AllowAny
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from accounts import oidc
from accounts.models import Token
from accounts.oidc_views import end_sessions
from accounts.permissions import is_admin
from accounts.throttling import sign_in_name
from accounts.tokens import issue_token, purge_expired_tokens, revoke_token, token_handle
from catalogue import Message
from web.api.auth import NotApplicationToken
from web.api.errors import ApiError, validated
from web.api.throttles import LoginAccountThrottle, LoginAddressThrottle


class LoginRequest(serializers.Serializer):
    username = serializers.CharField(max_length=150)
    password = serializers.CharField(max_length=4096, trim_whitespace=False)
    # Seconds, as in OpenPAI (its web portal asks for days * 86400).
    expiration = serializers.IntegerField(required=False, min_value=60, max_value=365 * 24 * 3600)


LOGIN_RESPONSE = inline_serializer(
    "LoginResponse",
    {"user": serializers.CharField(), "token": serializers.CharField(), "admin": serializers.BooleanField()},
)
MESSAGE_RESPONSE = inline_serializer("MessageResponse", {"message": serializers.CharField()})


def token_row(token: Token) -> dict[str, Any]:
    return {
        "id": token.pk,
        "name": token.name,
        "kind": token.kind,
        "prefix": token.key_prefix,
        "createdTime": int(token.created.timestamp() * 1000),
        "expiresTime": int(token.expires.timestamp() * 1000),
        "lastUsedTime": int(token.last_used.timestamp() * 1000) if token.last_used else None,
    }


class LoginView(APIView):
    """`POST /api/v2/authn/basic/login` and the legacy `POST /api/v1/token`."""

    authentication_classes: list = []  # a password, not a session: no CSRF to check
    permission_classes = [AllowAny]
    throttle_classes = [LoginAddressThrottle, LoginAccountThrottle]

    @extend_schema(request=LoginRequest, responses={200: LOGIN_RESPONSE}, auth=[])
    def post(self, request: Request) -> Response:
        fields = validated(LoginRequest, request.data)
        username = sign_in_name(fields["username"])  # as the login page reads it, and as throttled
        user = authenticate(request._request, username=username, password=fields["password"])
        if user is None:
            raise ApiError(400, "IncorrectPasswordError", Message.of("api.auth.incorrect"))
        purge_expired_tokens(user)
        lifetime = fields.get("expiration", settings.PAI_API_LOGIN_TOKEN_SECONDS)
        raw, _ = issue_token(user, Token.Kind.LOGIN, name="login", lifetime_s=lifetime)
        return Response({"user": user.get_username(), "token": raw, "admin": is_admin(user)})


class LogoutView(APIView):
    """`DELETE /api/v2/authn/basic/logout`: revokes the token the call came with (or the session)."""

    @extend_schema(request=None, responses={200: MESSAGE_RESPONSE})
    def delete(self, request: Request) -> Response:
        if isinstance(request.auth, Token):
            request.auth.delete()
        else:
            logout(request._request)
        return Response({"message": "logout successfully"})


class TokenListView(APIView):
    """`GET /api/v2/tokens`: the caller's tokens. Only hashes are kept, so `tokens` holds OpenPAI's
    strings as handles (decodable, revocable, not usable); `details` the portal's rows."""

    @extend_schema(responses={200: OpenApiTypes.OBJECT})
    def get(self, request: Request) -> Response:
        tokens = list(Token.objects.filter(user=cast(Any, request.user)).select_related("user"))
        return Response(
            {"tokens": [token_handle(token) for token in tokens], "details": [token_row(token) for token in tokens]}
        )


class TokenCheckView(APIView):
    """`GET /api/v2/tokens/check`: who the token (or session) in this request is."""

    @extend_schema(responses={200: OpenApiTypes.OBJECT})
    def get(self, request: Request) -> Response:
        token = request.auth if isinstance(request.auth, Token) else None
        return Response(
            {
                "username": request.user.get_username(),
                "admin": is_admin(request.user),
                "application": bool(token and token.kind == Token.Kind.APPLICATION),
                "iat": int(token.created.timestamp()) if token else None,
                "exp": int(token.expires.timestamp()) if token else None,
            }
        )


class AuthnInfoView(APIView):
    """`GET /api/v{1,2}/authn/info`: how to sign in (OpenPAI's webportal asks before showing its
    login): OpenID Connect's redirect when it is configured, else the basic login."""

    authentication_classes: list = []
    permission_classes = [AllowAny]

    @extend_schema(responses={200: OpenApiTypes.OBJECT}, auth=[])
    def get(self, request: Request) -> Response:
        if oidc.enabled():
            return Response({"authn_type": "OIDC", "loginURI": "/api/v1/authn/oidc/login", "loginURIMethod": "get"})
        return Response({"authn_type": "basic", "loginURI": "/api/v1/authn/basic/login", "loginURIMethod": "post"})


REDIRECTED = OpenApiResponse(description="A redirect (302).")


class OidcLoginView(APIView):
    """`GET /api/v{1,2}/authn/oidc/login?redirect_uri=&from=`: to the OpenID provider; once signed in
    there, back to redirect_uri with `?user=&token=&admin=&from=` (a new login token), as OpenPAI's
    rest-server. Only to the portal's own origin or an address in PAI_OIDC_REDIRECT_URIS: a token
    in a URL to any other host would be handed to that host."""

    authentication_classes: list = []
    permission_classes = [AllowAny]

    @extend_schema(
        parameters=[
            OpenApiParameter("redirect_uri", str, description="Where the token is sent after signing in."),
            OpenApiParameter("from", str, required=False, description="Passed back as it is."),
        ],
        responses={302: REDIRECTED},
        auth=[],
    )
    def get(self, request: Request) -> HttpResponseRedirect:
        if not oidc.enabled():
            raise ApiError(400, "InvalidParametersError", Message.of("api.auth.no_oidc"))
        target = oidc.safe_api_redirect(request.query_params.get("redirect_uri", ""))
        if target is None:
            raise ApiError(400, "InvalidParametersError", Message.of("api.auth.redirect_uri"), "redirect_uri")
        api = {"redirect_uri": target, "from": request.query_params.get("from", "")[:200]}
        try:
            return HttpResponseRedirect(oidc.start(request._request, api=api))
        except oidc.SignInFailed as error:
            refused = Message.of("api.auth.oidc_failed", said=error.reason)
            raise ApiError(502 if error.status == 502 else 400, "UnknownError", refused) from error


class OidcLogoutView(APIView):
    """`GET /api/v{1,2}/authn/oidc/logout`: ends the session and goes to the provider's logout (it
    comes back to the sign-in page), or to the sign-in page when the provider has none.

    OpenPAI's contract makes it a GET, so a page of another site could sign a reader out by an
    image or a link: a navigation the browser marks as coming from another site ends nothing unless
    it comes from an address the portal trusts (its own, or one in PAI_OIDC_REDIRECT_URIS, where
    OpenPAI's web portal may be served)."""

    authentication_classes: list = []
    permission_classes = [AllowAny]

    @extend_schema(request=None, responses={302: REDIRECTED}, auth=[])
    def get(self, request: Request) -> HttpResponseRedirect:
        if not _from_a_trusted_site(request):
            return HttpResponseRedirect("/")
        provider = end_sessions(request._request, provider_too=True) if oidc.enabled() else ""
        return HttpResponseRedirect(provider or settings.LOGIN_URL)


def _from_a_trusted_site(request: Request) -> bool:
    """False for a request the browser says came from another site (Sec-Fetch-Site) whose referring
    page is not on an address the portal trusts. Clients that send no Sec-Fetch-Site (scripts,
    OpenPAI's SDK) are trusted, as a script holding the session could log out anyway."""
    if request.headers.get("Sec-Fetch-Site", "same-origin") in ("same-origin", "none"):
        return True
    referer = request.headers.get("Referer", "")
    return bool(referer) and oidc.safe_api_redirect(referer) is not None


class ApplicationTokenRequest(serializers.Serializer):
    name = serializers.CharField(max_length=128, required=False, allow_blank=True)
    expiration = serializers.IntegerField(required=False, min_value=60, max_value=10 * 365 * 24 * 3600)


class ApplicationTokenView(APIView):
    """`POST /api/v2/tokens/application`: a long-lived token for scripts, never for admin operations."""

    permission_classes = [*APIView.permission_classes, NotApplicationToken]

    @extend_schema(request=ApplicationTokenRequest, responses={200: OpenApiTypes.OBJECT})
    def post(self, request: Request) -> Response:
        body = validated(ApplicationTokenRequest, request.data if hasattr(request.data, "get") else {})
        raw, token = issue_token(
            request.user,
            Token.Kind.APPLICATION,
            name=body.get("name", "") or "application",
            lifetime_s=body.get("expiration"),
        )
        return Response({"token": raw, **token_row(token)})


class TokenRevokeView(APIView):
    """`DELETE /api/v2/tokens/<token>`: the token's value, or its id from the list."""

    permission_classes = [*APIView.permission_classes, NotApplicationToken]

    @extend_schema(request=None, responses={200: MESSAGE_RESPONSE})
    def delete(self, request: Request, token: str) -> Response:
        if not revoke_token(request.user, token):
            raise ApiError(404, "NoTokenError", Message.of("api.auth.no_token"))
        return Response({"message": "revoke successfully"})
