"""Resource usage routes: a job's, and the Usage page's."""

from django.urls import path

from web.usage import views

app_name = "jobs_usage"

urlpatterns = [
    path("jobs/<str:full_name>/usage.json", views.usage_json, name="usage"),
    path("usage/", views.usage_page, name="report"),
    path("usage/usage.csv", views.usage_csv, name="report-csv"),
]
