"""Cluster pages."""

from django.urls import path

from clusters import views

app_name = "clusters"

urlpatterns = [
    path("cluster/", views.cluster_overview, name="overview"),
]
