"""Resource usage routes of a job."""

from django.urls import path

from web.usage import views

app_name = "jobs_usage"

urlpatterns = [
    path("jobs/<str:full_name>/usage.json", views.usage_json, name="usage"),
]
