"""OpenID Connect sign-in (docs/admin/sign-in.md, "OpenID Connect") with Authlib's Django client: the provider's
endpoints come from its discovery document (<issuer>/.well-known/openid-configuration); the
authorization code flow with PKCE (S256), its state and nonce kept in the session and checked; the
ID token's signature (the provider's JWKS), issuer, audience, expiry and nonce verified.

A sign-in names the user by PAI_OIDC_USERNAME_CLAIM (else the part of `email` before '@', as
OpenPAI did), creates them at their first one (an unusable password), mirrors their groups from
PAI_OIDC_GROUPS_CLAIM (the ID token's claims, else the userinfo endpoint's) with
accounts.groups.set_directory_groups, and signs them in to a session of OidcBackend. Anything that
goes wrong is a SignInFailed with the reason in the user's words, never an error of the server."""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterable
from typing import Any
from urllib.parse import urljoin, urlsplit

import requests
from authlib.common.errors import AuthlibBaseError
from authlib.integrations.django_client import OAuth
from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.auth.backends import ModelBackend
from django.contrib.auth.hashers import make_password
from django.core.exceptions import ValidationError
from django.core.validators import validate_email
from django.http import HttpRequest
from django.urls import reverse
from django.utils.translation import gettext as _
from joserfc.errors import ClaimError, ExpiredTokenError, JoseError

from accounts.groups import account_of, record, set_directory_groups
from accounts.links import public_url
from accounts.models import Account

logger = logging.getLogger(__name__)

SOURCE = Account.Source.OIDC
BACKEND = "accounts.oidc.OidcBackend"
ID_TOKEN_KEY = "oidc_id_token"  # noqa: S105  (a session key: the ID token kept for the logout's id_token_hint)
CLIENT_NAME = "pai_oidc"


class OidcBackend(ModelBackend):
    """The backend of the sessions an OpenID Connect sign-in makes. Nobody signs in to it with a
    password (authenticate answers None); get_user is ModelBackend's, so those sessions stay valid
    and end when the user is deactivated."""

    def authenticate(
        self, request: HttpRequest | None, username: str | None = None, password: str | None = None, **kwargs: Any
    ) -> None:
        return None


class SignInFailed(Exception):
    """Why signing in with the provider failed, in the user's words; `status` is the page's."""

    def __init__(self, reason: str, status: int = 400) -> None:
        super().__init__(reason)
        self.reason, self.status = reason, status


def enabled() -> bool:
    return bool(settings.PAI_OIDC_ISSUER)


def provider_name() -> str:
    """How the pages name the provider: PAI_OIDC_NAME, else the issuer's host."""
    return settings.PAI_OIDC_NAME or urlsplit(settings.PAI_OIDC_ISSUER).hostname or settings.PAI_OIDC_ISSUER


def button_label() -> str:
    return settings.PAI_OIDC_BUTTON or _("Sign in with single sign-on")


def callback_url() -> str:
    """The redirect URI registered at the provider."""
    return public_url(reverse("oidc-callback"))


# One Authlib client per configuration (tests change it); each keeps the provider's discovery
# document and keys once read (keys are read again when a token names one it does not know).
_clients: dict[tuple[Any, ...], Any] = {}
_clients_lock = threading.Lock()


def client() -> Any:
    issuer = settings.PAI_OIDC_ISSUER
    key = (
        issuer,
        settings.PAI_OIDC_CLIENT_ID,
        settings.PAI_OIDC_CLIENT_SECRET,
        settings.PAI_OIDC_SCOPES,
        settings.PAI_OIDC_TIMEOUT_SECONDS,
    )
    with _clients_lock:
        app = _clients.get(key)
        if app is None:
            _clients.clear()
            app = OAuth().register(
                CLIENT_NAME,
                client_id=settings.PAI_OIDC_CLIENT_ID,
                client_secret=settings.PAI_OIDC_CLIENT_SECRET,
                server_metadata_url=f"{issuer}/.well-known/openid-configuration",
                client_kwargs={
                    "scope": settings.PAI_OIDC_SCOPES,
                    "code_challenge_method": "S256",
                    "default_timeout": settings.PAI_OIDC_TIMEOUT_SECONDS,
                },
            )
            _clients[key] = app
    return app


def _unreachable(error: Exception) -> SignInFailed:
    logger.warning("OpenID provider %s: %s", settings.PAI_OIDC_ISSUER, error)
    return SignInFailed(_("the provider did not answer as expected; try again later."), 502)


def metadata() -> dict[str, Any]:
    """The provider's discovery document; its issuer must be the configured one."""
    try:
        found: dict[str, Any] = client().load_server_metadata()
    except (requests.RequestException, ValueError) as error:
        raise _unreachable(error) from error
    if str(found.get("issuer", "")).rstrip("/") != settings.PAI_OIDC_ISSUER:
        raise SignInFailed(_("the provider's discovery document names another issuer."), 502)
    return found


def end_session_endpoint() -> str:
    """Where the provider ends its own session ('' when it has no such endpoint or is down)."""
    try:
        return str(metadata().get("end_session_endpoint") or "")
    except SignInFailed:
        return ""


def start(request: HttpRequest, *, next_url: str = "", api: dict[str, str] | None = None) -> str:
    """The provider's authorization URL for a new sign-in; what to do after it (the page to land
    on, or the API's redirect) is kept in the session with the state, nonce and PKCE verifier."""
    metadata()
    app = client()
    redirect_uri = callback_url()
    try:
        found = app.create_authorization_url(redirect_uri)
    except (requests.RequestException, ValueError, RuntimeError) as error:
        raise _unreachable(error) from error
    app.save_authorize_data(request, redirect_uri=redirect_uri, next=next_url, api=api, **found)
    return str(found["url"])


def finish(request: HttpRequest) -> tuple[Any, dict[str, Any], dict[str, Any]]:
    """The callback: checks the state, exchanges the code (with the PKCE verifier), verifies the ID
    token and signs in no one yet: returns (user, token, what start() kept)."""
    app = client()
    state = request.GET.get("state") or ""
    kept = app.framework.get_state_data(request.session, state) if state else None
    if kept is None:
        raise SignInFailed(_("this sign-in was not started here or took too long (its state does not match)."))
    app.framework.clear_state_data(request.session, state)
    refused = request.GET.get("error")
    if refused:
        description = request.GET.get("error_description") or ""
        reason = f"{refused}: {description}" if description else refused
        raise SignInFailed(reason[:300], 403 if refused == "access_denied" else 400)
    found = metadata()
    if "iss" in request.GET and request.GET["iss"] != found["issuer"]:  # RFC 9207: a mix-up
        raise SignInFailed(_("the answer came from another issuer."))
    code = request.GET.get("code")
    if not code:
        raise SignInFailed(_("the provider sent no authorization code."))
    try:
        token = app.fetch_access_token(
            code=code, redirect_uri=kept.get("redirect_uri"), code_verifier=kept.get("code_verifier")
        )
    except AuthlibBaseError as no_token:
        reason = getattr(no_token, "description", "") or getattr(no_token, "error", "") or str(no_token)
        raise SignInFailed(_("the provider refused the code (%(reason)s).") % {"reason": reason}) from no_token
    except (requests.RequestException, ValueError) as error:
        raise _unreachable(error) from error
    claims = id_token_claims(token, nonce=kept.get("nonce") or "")
    claims = with_userinfo(token, claims)
    return user_for(claims), token, kept


def id_token_claims(token: dict[str, Any], *, nonce: str) -> dict[str, Any]:
    """The ID token's claims once its signature (the provider's keys), issuer, audience (this
    client), expiry and nonce are verified."""
    if not isinstance(token, dict) or not token.get("id_token"):
        raise SignInFailed(_("the provider sent no ID token."))
    if not nonce:
        raise SignInFailed(_("this sign-in has no nonce to check the ID token with."))
    found = metadata()
    options = {
        "iss": {"essential": True, "value": found["issuer"]},
        "aud": {"essential": True, "value": settings.PAI_OIDC_CLIENT_ID},
    }
    try:
        claims = client().parse_id_token(token, nonce=nonce, claims_options=options)
    except ExpiredTokenError as error:
        raise SignInFailed(_("the ID token has expired.")) from error
    except ClaimError as error:
        raise SignInFailed(
            _("the ID token's claim “%(claim)s” is wrong or missing.") % {"claim": error.claim}
        ) from error
    except (JoseError, ValueError, TypeError) as error:
        logger.warning("OpenID provider %s: an ID token refused: %s", settings.PAI_OIDC_ISSUER, error)
        reason = getattr(error, "error", "") or type(error).__name__
        raise SignInFailed(_("the ID token is not signed by the provider (%(error)s).") % {"error": reason}) from error
    except (requests.RequestException, RuntimeError) as error:
        raise _unreachable(error) from error
    if claims is None:
        raise SignInFailed(_("the provider sent no ID token."))
    return dict(claims)


def with_userinfo(token: dict[str, Any], claims: dict[str, Any]) -> dict[str, Any]:
    """The ID token's claims, completed from the userinfo endpoint when it lacks the user's name,
    email or groups (most providers put them there in the code flow); the ID token's win."""
    wanted = {settings.PAI_OIDC_USERNAME_CLAIM, "email", settings.PAI_OIDC_GROUPS_CLAIM}
    endpoint = metadata().get("userinfo_endpoint")
    if wanted <= claims.keys() or not endpoint:
        return claims
    try:
        info = dict(client().userinfo(token=token))
    except AuthlibBaseError as error:
        raise SignInFailed(_("the provider refused to tell who signed in (%(error)s).") % {"error": error}) from error
    except (requests.RequestException, ValueError) as error:
        raise _unreachable(error) from error
    if info.get("sub") != claims.get("sub"):
        raise SignInFailed(_("the provider's user info is about someone else."))
    return {**info, **claims}


def username_from(claims: dict[str, Any]) -> str:
    value = claims.get(settings.PAI_OIDC_USERNAME_CLAIM)
    email = claims.get("email")
    unverified = claims.get("email_verified") in (False, "false")  # anyone could have typed it
    if not value and isinstance(email, str) and "@" in email and not unverified:
        value = email.rpartition("@")[0]
    if not value:
        raise SignInFailed(
            _("the provider named no user (no claim “%(claim)s” and no email).")
            % {"claim": settings.PAI_OIDC_USERNAME_CLAIM}
        )
    User: Any = get_user_model()
    name = str(value)
    try:
        if not isinstance(value, str) or len(name) > 150:
            raise ValidationError("too long")
        User.username_validator(name)
    except ValidationError:
        raise SignInFailed(
            _("“%(name)s” cannot be a user name here (letters, digits and @.+-_ only, at most 150).")
            % {"name": name[:160]}
        ) from None
    return name


def groups_from(claims: dict[str, Any]) -> list[str]:
    """The groups claim's names: a list of names (or one name); absent means none."""
    value = claims.get(settings.PAI_OIDC_GROUPS_CLAIM)
    items: Iterable[Any] = [value] if isinstance(value, str) else value if isinstance(value, list) else []
    return [item for item in items if isinstance(item, str) and item.strip()]


def user_for(claims: dict[str, Any]) -> Any:
    """The portal's user for these claims: created at the first sign-in (unusable password), their
    email and groups as the provider says now. A deactivated user is refused."""
    name = username_from(claims)
    email = claims.get("email") if isinstance(claims.get("email"), str) else ""
    try:
        validate_email(email)
    except ValidationError:
        email = ""
    User: Any = get_user_model()
    user, created = User.objects.get_or_create(
        username=name, defaults={"email": email, "password": make_password(None)}
    )
    if created:
        record(None, "user.create", name, source=SOURCE)
    elif user.has_usable_password():
        # A local account (it has a portal password) is never taken over by a provider's user of
        # the same name (as with LDAP): that name signs in with its own password.
        raise SignInFailed(
            _("%(name)s is a local account of this portal: sign in with its password.") % {"name": name}, 403
        )
    elif account_of(user).source == Account.Source.LDAP:
        # Nor is a user of the LDAP directory (both may be configured): each directory its own.
        raise SignInFailed(_("%(name)s signs in with the LDAP directory: use its password.") % {"name": name}, 403)
    elif not user.is_active:
        raise SignInFailed(_("the account %(name)s is deactivated.") % {"name": name}, 403)
    elif email and user.email != email:
        user.email = email
        user.save(update_fields=["email"])
    set_directory_groups(user, groups_from(claims), SOURCE)  # also marks the account's source
    return user


def safe_api_redirect(uri: str) -> str | None:
    """The API flow's redirect_uri, absolute, when the portal may send a token there: its own origin
    (PAI_PUBLIC_URL) or an address in PAI_OIDC_REDIRECT_URIS (an entry with a path: that path only;
    without one: its whole origin). None for anything else."""
    if not uri or "\\" in uri or any(ord(char) < 33 for char in uri):
        return None
    absolute = urljoin(settings.PAI_PUBLIC_URL.rstrip("/") + "/", uri)
    target = urlsplit(absolute)
    if target.scheme not in ("http", "https") or not target.netloc or target.username or target.password:
        return None
    for allowed in [settings.PAI_PUBLIC_URL, *settings.PAI_OIDC_REDIRECT_URIS]:
        entry = urlsplit(allowed)
        if (entry.scheme, entry.netloc.lower()) != (target.scheme, target.netloc.lower()):
            continue
        if allowed == settings.PAI_PUBLIC_URL or entry.path in ("", "/") or entry.path == target.path:
            return absolute
    return None
