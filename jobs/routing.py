"""Websocket routes (web SSH terminal)."""

from django.urls import path

from jobs.consumers import TerminalConsumer

websocket_urlpatterns = [
    path("ws/jobs/<str:full_name>/terminal/<str:role>/<int:index>/", TerminalConsumer.as_asgi()),
]
