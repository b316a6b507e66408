"""Notification routes."""

from django.urls import path

from web.notifications import views

app_name = "jobs_notifications"

urlpatterns = [
    path("notifications/ended.json", views.ended_jobs, name="ended"),
]
