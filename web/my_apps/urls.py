"""My apps: every live notebook, TensorBoard and app of the user's jobs (`apps:open` opens one)."""

from django.urls import path

from web.my_apps import views

app_name = "my_apps"

urlpatterns = [
    path("apps/", views.app_list, name="list"),
]
