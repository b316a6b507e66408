"""The storage page (the user's area of the default FS)."""

from django.urls import path

from web.storage import views

app_name = "storage"

urlpatterns = [
    path("storage/", views.storage_page, name="browse"),
    path("storage/download", views.storage_download, name="download"),
]
