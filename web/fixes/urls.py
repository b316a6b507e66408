"""Fix routes of a failed job."""

from django.urls import path

from web.fixes import views

app_name = "jobs_fixes"

urlpatterns = [
    path("jobs/<str:full_name>/resubmit-memory/", views.resubmit_with_memory, name="resubmit_memory"),
]
