"""The VC pages (admins): the VCs, one VC's jobs, usage and users, its form and its removal. A
name is a path (`createvc` and the form take any name, a slash too); edit and remove come first
so that their endings are not read as part of a name."""

from django.urls import path

from web.vcs import views

app_name = "vcs"

urlpatterns = [
    path("cluster/vcs/", views.vc_list, name="list"),
    path("cluster/new-vc/", views.vc_new, name="new"),
    path("cluster/vcs/<path:name>/edit/", views.vc_edit, name="edit"),
    path("cluster/vcs/<path:name>/remove/", views.vc_remove, name="remove"),
    path("cluster/vcs/<path:name>/", views.vc_detail, name="detail"),
]
