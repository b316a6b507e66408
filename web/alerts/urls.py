"""Alerts and their rules."""

from django.urls import path

from web.alerts import views

app_name = "alerts"

urlpatterns = [
    path("alerts/", views.alert_list, name="list"),
    path("alerts/rules/<int:rule_id>/remove/", views.rule_remove, name="remove"),
]
