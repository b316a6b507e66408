"""`{% route_url "jobs:list" %}`: `{% url %}` for a route without arguments, reversed once
(web/route_urls.py); `{% route_url "jobs:list" as list_url %}` too."""

from __future__ import annotations

from typing import Any

from django import template

from web.route_urls import route_url as kept_route_url

register = template.Library()


@register.simple_tag(takes_context=True)
def route_url(context: Any, name: str) -> str:
    try:  # the current app as {% url %} takes it
        current_app = context.request.current_app
    except AttributeError:
        try:
            current_app = context.request.resolver_match.namespace
        except AttributeError:
            current_app = None
    return kept_route_url(name, current_app)
