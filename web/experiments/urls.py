"""Training metrics routes: a job's (the job page's plot, the CSV)."""

from django.urls import path

from web.experiments import views

app_name = "experiments"

urlpatterns = [
    path("jobs/<str:full_name>/metrics.json", views.metrics_json, name="metrics"),
    path("jobs/<str:full_name>/metrics.csv", views.metrics_csv, name="metrics-csv"),
]
