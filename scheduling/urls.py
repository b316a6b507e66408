"""Cluster pages."""

from django.urls import path

from scheduling import monitoring_views, views

app_name = "scheduling"

urlpatterns = [
    path("cluster/", views.cluster_overview, name="overview"),
    path("metrics", monitoring_views.metrics, name="metrics"),
]
