"""Cluster pages."""

from django.urls import path

from scheduling import views

app_name = "scheduling"

urlpatterns = [
    path("cluster/", views.cluster_overview, name="overview"),
]
