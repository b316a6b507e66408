"""My apps: every live notebook, TensorBoard and app of the user's jobs (`apps:open` opens one), and
its owner's sharing of one with a group."""

from django.urls import path

from web.my_apps import views

app_name = "my_apps"

urlpatterns = [
    path("apps/", views.app_list, name="list"),
    path("apps/<str:slug>/share/", views.app_share, name="share"),
]
