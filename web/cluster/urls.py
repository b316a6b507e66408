"""Cluster pages."""

from django.urls import path

from web.cluster import monitoring_views, views

app_name = "scheduling"

urlpatterns = [
    path("cluster/", views.cluster_overview, name="overview"),
    path("metrics", monitoring_views.metrics, name="metrics"),
    path("dashboard/", monitoring_views.dashboard, name="dashboard"),
    path("start/", monitoring_views.after_login, name="after-login"),
    path("dashboard/history.json", monitoring_views.dashboard_history, name="dashboard-history"),
]
