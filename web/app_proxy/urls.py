"""Opening an interactive app (its pages are served by the proxy at the app's own host)."""

from django.urls import path

from web.app_proxy import views

app_name = "apps"

urlpatterns = [
    path("apps/<str:slug>/open/", views.open_app, name="open"),
]
