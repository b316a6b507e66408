"""The sweeps pages: the list, one sweep with its runs, stop all, start the failed again."""

from django.urls import path

from web.sweeps import views

app_name = "sweeps"

urlpatterns = [
    path("sweeps/", views.sweep_list, name="list"),
    path("sweeps/<str:full_name>/", views.sweep_detail, name="detail"),
    path("sweeps/<str:full_name>/curves.json", views.sweep_curves, name="curves"),
    path("sweeps/<str:full_name>/points.json", views.sweep_points, name="points"),
    path("sweeps/<str:full_name>/stop/", views.sweep_stop, name="stop"),
    path("sweeps/<str:full_name>/resubmit/", views.sweep_resubmit, name="resubmit"),
]
