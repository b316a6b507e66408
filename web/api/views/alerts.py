"""`GET /api/v2/alerts` (OpenPAI's route, Alertmanager's shape): the firing alerts about your jobs
(an admin's: all); `?state=all` adds the cleared ones (history). `/api/v2/alert-rules`: the
rules, which admins add (POST) and remove (DELETE .../<id>)."""

from __future__ import annotations

from typing import Any

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from accounts.permissions import is_admin
from catalogue import Message
from scheduling.alerts import RuleError, alert_shape, save_rule, visible_alerts
from scheduling.models import AlertRule
from web.api.errors import ApiConfigError, ApiError

HISTORY = 500


class AlertsView(APIView):
    @extend_schema(
        operation_id="v2_alerts",
        parameters=[OpenApiParameter("state", str, enum=["active", "all"], description="default active")],
        responses={200: OpenApiTypes.OBJECT},
    )
    def get(self, request: Request) -> Response:
        """Firing alerts (and with `state=all`, cleared ones), newest first."""
        alerts = visible_alerts(request.user, is_admin(request.user))
        if request.query_params.get("state", "active") != "all":
            alerts = alerts.filter(resolved_at__isnull=True)
        return Response([alert_shape(alert) for alert in alerts[:HISTORY]])


def rule_shape(rule: AlertRule) -> dict[str, Any]:
    return {
        "id": rule.pk,
        "name": rule.name,
        "condition": rule.condition,
        "minutes": rule.minutes,
        "percent": rule.percent,
        "actions": rule.actions,
        "graceMinutes": rule.grace_minutes,
    }


def _admin(request: Request) -> None:
    if not is_admin(request.user):
        raise ApiError(403, "ForbiddenUserError", Message.of("api.alert.admins_only"))


class AlertRulesView(APIView):
    @extend_schema(operation_id="v2_alert_rules_list", responses={200: OpenApiTypes.OBJECT})
    def get(self, request: Request) -> Response:
        """The alert rules (everyone may read them)."""
        return Response([rule_shape(rule) for rule in AlertRule.objects.all()])

    @extend_schema(
        operation_id="v2_alert_rules_create", request=OpenApiTypes.OBJECT, responses={201: OpenApiTypes.OBJECT}
    )
    def post(self, request: Request) -> Response:
        """Add a rule: {name, condition, minutes, percent, actions, graceMinutes} (admins)."""
        _admin(request)
        data = request.data if isinstance(request.data, dict) else {}
        try:
            rule = save_rule(
                name=data.get("name"),
                condition=data.get("condition"),
                minutes=data.get("minutes", 60),
                percent=data.get("percent", 5),
                actions=data.get("actions") or [],
                grace_minutes=data.get("graceMinutes", 30),
            )
        except RuleError as error:
            raise ApiConfigError(400, "InvalidParametersError", "; ".join(error.messages), error) from error
        return Response(rule_shape(rule), status=201)


class AlertRuleView(APIView):
    @extend_schema(operation_id="v2_alert_rules_delete", responses={200: OpenApiTypes.OBJECT})
    def delete(self, request: Request, rule_id: int) -> Response:
        """Remove a rule and its alerts (admins)."""
        _admin(request)
        deleted, _ = AlertRule.objects.filter(pk=rule_id).delete()
        if not deleted:
            raise ApiError(404, "NoAlertRuleError", Message.of("api.alert.not_found", rule=rule_id))
        return Response({"message": f"Alert rule {rule_id} removed."})
