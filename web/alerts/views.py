"""The alerts page (/alerts/): firing alerts and their history (yours; an admin's: all), and for
admins the rules: add one (each field checked in the page), remove one after asking."""

from __future__ import annotations

from typing import Any

from django.core.exceptions import PermissionDenied
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import render
from django.urls import reverse
from django.utils.translation import gettext as _
from django.views.decorators.http import require_http_methods

from accounts.permissions import is_admin
from catalogue import Message
from scheduling.alerts import ACTIONS, RuleError, save_rule, visible_alerts
from scheduling.models import AlertRule

SHOWN = 200


def _number(text: str) -> Any:
    return int(text) if text.strip().lstrip("-").isdigit() else text


@require_http_methods(["GET", "POST"])
def alert_list(request: HttpRequest) -> HttpResponse:
    admin = is_admin(request.user)
    values: dict[str, Any] = {
        "name": "",
        "condition": "gpu_idle",
        "minutes": 60,
        "percent": 5,
        "grace": 30,
        "actions": [],
    }
    errors: list[tuple[str, Message]] = []
    if request.method == "POST":
        if not admin:
            raise PermissionDenied(_("Only cluster admins change alert rules."))
        values = {
            "name": request.POST.get("name", ""),
            "condition": request.POST.get("condition", ""),
            "minutes": _number(request.POST.get("minutes", "")),
            "percent": _number(request.POST.get("percent", "5")),
            "grace": _number(request.POST.get("grace", "30")),
            "actions": request.POST.getlist("actions"),
        }
        try:
            save_rule(
                values["name"],
                values["condition"],
                values["minutes"],
                values["percent"],
                values["actions"],
                values["grace"],
            )
        except RuleError as error:
            errors = error.errors
        else:
            return HttpResponseRedirect(reverse("alerts:list"))
    alerts = visible_alerts(request.user, admin)
    context = {
        "firing": alerts.filter(resolved_at__isnull=True)[:SHOWN],
        "cleared": alerts.filter(resolved_at__isnull=False)[:SHOWN],
        "rules": AlertRule.objects.all(),
        "admin": admin,
        "conditions": AlertRule.Condition.values,
        "actions": ACTIONS,
        "values": values,
        "errors": errors,
    }
    return render(request, "alerts/list.html", context, status=400 if errors else 200)


@require_http_methods(["GET", "POST"])
def rule_remove(request: HttpRequest, rule_id: int) -> HttpResponse:
    if not is_admin(request.user):
        raise PermissionDenied(_("Only cluster admins change alert rules."))
    rule = AlertRule.objects.filter(pk=rule_id).first()
    if rule is None:
        raise Http404("No such rule.")
    if request.method == "POST":
        rule.delete()
        return HttpResponseRedirect(reverse("alerts:list"))
    return render(request, "alerts/remove.html", {"rule": rule})
