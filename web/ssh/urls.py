"""SSH routes: key download, SSH info, terminal page (the websocket is in web.routing)."""

from django.urls import path

from web.ssh import views

app_name = "jobs_ssh"

urlpatterns = [
    path("jobs/<str:full_name>/ssh/key/", views.download_key, name="key"),
    path("jobs/<str:full_name>/ssh.json", views.ssh_info_json, name="info"),
    path("jobs/<str:full_name>/terminal/<str:role>/<int:index>/", views.terminal, name="terminal"),
]
