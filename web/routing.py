"""Websocket routes (web SSH terminal)."""

from channels.generic.websocket import WebsocketConsumer
from django.urls import path, re_path

from web.consumers import TerminalConsumer


class UnknownPathConsumer(WebsocketConsumer):
    """Any other path (a `%2F` in a job name included): refused, instead of the router's error."""

    def connect(self) -> None:
        self.close(code=4404)


websocket_urlpatterns = [
    path("ws/jobs/<str:full_name>/terminal/<str:role>/<int:index>/", TerminalConsumer.as_asgi()),
    re_path(r"", UnknownPathConsumer.as_asgi()),
]
