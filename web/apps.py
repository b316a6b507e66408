from django.apps import AppConfig


class WebConfig(AppConfig):
    """No models: the pages, API and web terminal over the apps below."""

    name = "web"
