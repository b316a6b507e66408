"""Fix routes of a failed job."""

from django.urls import path

from web.fixes import views

app_name = "jobs_fixes"

urlpatterns = [
    path("jobs/<str:full_name>/resubmit-fix/", views.resubmit_with_fix, name="resubmit_fix"),
    # The OOM fix's first address (pages and scripts made before the other fixes).
    path("jobs/<str:full_name>/resubmit-memory/", views.resubmit_with_fix, name="resubmit_memory"),
]
