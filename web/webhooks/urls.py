"""Webhooks, under the profile."""

from django.urls import path

from web.webhooks import views

app_name = "webhooks"

urlpatterns = [
    path("profile/webhooks/", views.webhook_list, name="list"),
    path("profile/webhooks/<int:hook_id>/remove/", views.webhook_remove, name="remove"),
]
