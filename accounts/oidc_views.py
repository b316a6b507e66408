"""The OpenID Connect pages: /login/oidc/ (to the provider), /login/oidc/callback/ (back from it:
signed in, or the error page), and the portal's logout, which ends the provider's session too when
the user signed in there. The API's /api/v{1,2}/authn/oidc/login starts the same flow
(web/api/views/auth.py); its callback redirects with a new login token as OpenPAI's rest-server did."""

from __future__ import annotations

from typing import Any
from urllib.parse import urlencode, urlsplit, urlunsplit

from django.conf import settings
from django.contrib.auth import BACKEND_SESSION_KEY, login, logout
from django.contrib.auth.decorators import login_not_required
from django.contrib.auth.views import LogoutView
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import render
from django.utils.http import url_has_allowed_host_and_scheme
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET

from accounts import oidc
from accounts.links import public_url
from accounts.models import Token
from accounts.permissions import is_admin
from accounts.tokens import issue_token
from accounts.views import NOT_AFTER_LOGIN


def failed(request: HttpRequest, error: oidc.SignInFailed) -> HttpResponse:
    context = {"provider": oidc.provider_name(), "reason": error.reason}
    return render(request, "registration/oidc_error.html", context, status=error.status)


def safe_next(request: HttpRequest, url: str | None) -> str:
    """`next` when it is a page of this portal (not the sign-in page itself), else ''."""
    if not url or not url_has_allowed_host_and_scheme(
        url, allowed_hosts={request.get_host()}, require_https=request.is_secure()
    ):
        return ""
    return "" if urlsplit(url).path.startswith(NOT_AFTER_LOGIN) else url


@login_not_required
@never_cache
@require_GET
def oidc_login(request: HttpRequest) -> HttpResponse:
    if not oidc.enabled():
        raise Http404("OpenID Connect is not configured")
    try:
        return HttpResponseRedirect(oidc.start(request, next_url=safe_next(request, request.GET.get("next"))))
    except oidc.SignInFailed as error:
        return failed(request, error)


@login_not_required
@never_cache
@require_GET
def oidc_callback(request: HttpRequest) -> HttpResponse:
    if not oidc.enabled():
        raise Http404("OpenID Connect is not configured")
    try:
        user, token, kept = oidc.finish(request)
    except oidc.SignInFailed as error:
        return failed(request, error)
    login(request, user, backend=oidc.BACKEND)
    request.session[oidc.ID_TOKEN_KEY] = token.get("id_token", "")
    api = kept.get("api")
    if isinstance(api, dict) and api.get("redirect_uri"):
        return HttpResponseRedirect(api_landing(user, api))
    return HttpResponseRedirect(safe_next(request, kept.get("next")) or settings.LOGIN_REDIRECT_URL)


def api_landing(user: Any, api: dict[str, str]) -> str:
    """OpenPAI's answer to its OIDC login (rest-server controllers/v2/token.js): the client's
    redirect_uri (checked when the flow started) with ?user=&token=&admin=&from=."""
    raw, _token = issue_token(user, Token.Kind.LOGIN, name="login (OpenID Connect)")
    parts = urlsplit(api["redirect_uri"])
    fields = {
        "user": user.get_username(),
        "token": raw,
        "admin": str(is_admin(user)).lower(),
        "from": api.get("from", ""),
    }
    query = "&".join(filter(None, [parts.query, urlencode(fields)]))
    return urlunsplit((parts.scheme, parts.netloc, parts.path, query, ""))


def provider_logout_url(id_token: str) -> str:
    """The provider's end-session address, back to the portal's sign-in page after it ('' when
    the provider has none)."""
    if not oidc.enabled() or not oidc.end_session_endpoint():
        return ""
    found = oidc.client().create_logout_url(
        post_logout_redirect_uri=public_url(settings.LOGIN_URL),
        id_token_hint=id_token or None,
        client_id=settings.PAI_OIDC_CLIENT_ID,
    )
    return str(found["url"])


def end_sessions(request: HttpRequest, *, provider_too: bool = False) -> str:
    """Ends the portal's session; returns the provider's logout address when the user signed in
    there (or `provider_too`: OpenPAI's clients hold tokens, not sessions)."""
    with_provider = provider_too or request.session.get(BACKEND_SESSION_KEY) == oidc.BACKEND
    id_token = str(request.session.get(oidc.ID_TOKEN_KEY) or "")
    logout(request)
    return provider_logout_url(id_token) if with_provider else ""


class PortalLogoutView(LogoutView):
    """Django's logout (POST), then, for a user who signed in with OpenID Connect, the provider's
    own logout (RP-initiated), which comes back to the sign-in page."""

    def post(self, request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        if request.session.get(BACKEND_SESSION_KEY) == oidc.BACKEND:
            provider = end_sessions(request)
            if provider:
                return HttpResponseRedirect(provider)
        return super().post(request, *args, **kwargs)
