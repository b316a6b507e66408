"""The storage page (the user's area of the default FS)."""

from django.urls import path

from jobs import storage_views

app_name = "storage"

urlpatterns = [
    path("storage/", storage_views.storage_page, name="browse"),
]
