"""The webhooks page (/profile/webhooks/): a user's hooks (an admin's page adds the deployment's),
adding one (its secret shown once), removing one after asking, and the latest deliveries."""

from __future__ import annotations

from typing import Any

from django.http import Http404, HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import render
from django.urls import reverse
from django.views.decorators.http import require_http_methods

from accounts.permissions import is_admin
from catalogue import Message
from jobs import webhooks
from jobs.models import WebhookDelivery

DEFAULT_EVENTS = ("failed", "succeeded")
SHOWN_DELIVERIES = 20


@require_http_methods(["GET", "POST"])
def webhook_list(request: HttpRequest) -> HttpResponse:
    admin = is_admin(request.user)
    values: dict[str, Any] = {"url": "", "events": list(DEFAULT_EVENTS), "everyone": False}
    error: Message | None = None
    secret, status = "", 200
    if request.method == "POST":
        values = {
            "url": request.POST.get("url", "").strip(),
            "events": [e for e in request.POST.getlist("events") if e in webhooks.EVENTS],
            "everyone": admin and request.POST.get("everyone") == "on",
        }
        try:
            _, secret = webhooks.create_hook(request.user, values["url"], values["events"], values["everyone"])
        except webhooks.TargetError as exc:
            error, status = exc.message, 400
        else:
            values = {"url": "", "events": list(DEFAULT_EVENTS), "everyone": False}
    hooks = webhooks.visible_hooks(request.user, admin).order_by("id")
    context = {
        "hooks": hooks,
        "deliveries": WebhookDelivery.objects.filter(webhook__in=hooks).select_related("webhook", "job", "job__owner")[
            :SHOWN_DELIVERIES
        ],
        "events": webhooks.EVENTS,
        "values": values,
        "error": error,
        "secret": secret,
        "admin": admin,
    }
    return render(request, "webhooks/list.html", context, status=status)


@require_http_methods(["GET", "POST"])
def webhook_remove(request: HttpRequest, hook_id: int) -> HttpResponse:
    hook = webhooks.visible_hooks(request.user, is_admin(request.user)).filter(pk=hook_id).first()
    if hook is None:
        raise Http404("No such webhook.")
    if request.method == "POST":
        webhooks.remove_hook(hook)
        return HttpResponseRedirect(reverse("webhooks:list"))
    return render(request, "webhooks/remove.html", {"hook": hook})
