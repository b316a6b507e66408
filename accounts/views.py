"""The profile page: the user's API tokens, listed, created (application) and revoked; when to be
told that a job ended."""

from __future__ import annotations

from typing import Any, cast
from urllib.parse import urlsplit

from django import forms
from django.conf import settings
from django.contrib import messages
from django.contrib.auth.forms import AuthenticationForm
from django.contrib.auth.views import LoginView
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.utils.translation import gettext as _
from django.views.decorators.http import require_http_methods, require_POST

from accounts import oidc
from accounts.models import NotificationPreference, SshPublicKey, Token
from accounts.ssh_keys import KeyRefused, add_key, remove_key
from accounts.throttling import login_wait
from accounts.tokens import issue_token, revoke_token


class NotificationForm(forms.ModelForm):
    class Meta:
        model = NotificationPreference
        fields = ["email", "browser", "weekly_report"]


def _preference(request: HttpRequest) -> NotificationPreference:
    return NotificationPreference.objects.get_or_create(user=cast(Any, request.user))[0]


@require_http_methods(["GET"])
def profile(request: HttpRequest) -> HttpResponse:
    return _profile_page(request)


def _profile_page(request: HttpRequest, status: int = 200, **extra: Any) -> HttpResponse:
    user = cast(Any, request.user)
    new_token = request.session.pop("new_api_token", None)
    context = {
        "tokens": Token.objects.filter(user=user),
        "new_token": new_token,
        "notification_form": NotificationForm(instance=_preference(request)),
        "ssh_keys": SshPublicKey.objects.filter(user=user),
        "key_errors": [],
        "key_text": "",
        "key_title": "",
        **extra,
    }
    return render(request, "accounts/profile.html", context, status=status)


@require_POST
def add_ssh_key(request: HttpRequest) -> HttpResponse:
    text = request.POST.get("key", "")
    title = request.POST.get("title", "")
    try:
        added = add_key(request.user, text, title)
    except KeyRefused as error:
        return _profile_page(request, status=400, key_errors=[str(error)], key_text=text, key_title=title)
    messages.success(
        request,
        _("SSH key %(name)s added: your jobs from now on accept it.") % {"name": added.title or added.fingerprint},
    )
    return redirect("profile")


@require_http_methods(["GET", "POST"])
def remove_ssh_key(request: HttpRequest, key_id: int) -> HttpResponse:
    """GET asks first (jobs submitted later no longer accept the key); POST removes it."""
    key = get_object_or_404(SshPublicKey, user=request.user, pk=key_id)
    name = key.title or key.fingerprint
    if request.method == "GET":
        return render(request, "accounts/remove_ssh_key.html", {"key": key, "name": name})
    remove_key(request.user, key.pk)
    removed = _("SSH key %(name)s removed: jobs submitted from now on do not accept it.")
    messages.success(request, removed % {"name": name})
    return redirect("profile")


@require_POST
def save_notifications(request: HttpRequest) -> HttpResponse:
    form = NotificationForm(request.POST, instance=_preference(request))
    if form.is_valid():
        form.save()
        messages.success(request, _("Notification settings saved."))
    return redirect("profile")


@require_POST
def create_application_token(request: HttpRequest) -> HttpResponse:
    name = (request.POST.get("name") or "").strip() or "application"
    raw, _token = issue_token(request.user, Token.Kind.APPLICATION, name=name)
    # Shown once on the next page view, then gone: only the hash is stored.
    request.session["new_api_token"] = raw
    return redirect("profile")


@require_http_methods(["GET", "POST"])
def revoke(request: HttpRequest, token_id: int) -> HttpResponse:
    """GET asks first (a script that sends the token is refused at once); POST revokes it."""
    token = get_object_or_404(Token, user=request.user, pk=token_id)
    if request.method == "GET":
        return render(request, "accounts/revoke_token.html", {"token": token})
    revoke_token(request.user, str(token.pk))
    messages.success(
        request,
        _("Token %(name)s (%(prefix)s…) revoked: whatever sends it is refused from now on.")
        % {"name": token.name, "prefix": token.key_prefix},
    )
    return redirect("profile")


# Never where signing in lands: the sign-in page itself, or the language switch (a POST-only view).
NOT_AFTER_LOGIN = ("/login/", "/i18n/")


class ThrottledLoginView(LoginView):
    """Django's login page, with the API login's throttles (per address and per account); it
    lands on `next`, unless that is the sign-in page or the language switch (then home)."""

    def get_redirect_url(self) -> str:
        url: str = super().get_redirect_url()
        return "" if urlsplit(url).path.startswith(NOT_AFTER_LOGIN) else url

    def get_context_data(self, **kwargs: Any) -> dict[str, Any]:
        context: dict[str, Any] = super().get_context_data(**kwargs)
        # The provider's button (OpenID Connect), and the password form only where a password
        # backend (local accounts or LDAP) can check it.
        context["oidc_button"] = oidc.button_label() if oidc.enabled() else ""
        context["password_form"] = bool(settings.PAI_LOCAL_ACCOUNTS or settings.PAI_LDAP_URI)
        return context

    def post(self, request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        wait = login_wait(request)
        if wait is None:
            return super().post(request, *args, **kwargs)
        message = _("Too many sign-in attempts; try again in %(seconds)d s.") % {"seconds": int(wait) + 1}
        context = self.get_context_data(form=AuthenticationForm(request), throttled=message)
        response = self.render_to_response(context, status=429)
        response["Retry-After"] = str(int(wait) + 1)
        return response
