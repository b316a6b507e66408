"""Cluster pages: the cluster overview, the dashboard and its numbers, /metrics."""
