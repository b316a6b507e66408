"""Models' and fields' names in the admin, in the page's language (Django's admin itself ships
zh_Hans; the portal's own names are given here).

Set on the models when the admin is loaded, not in the models' source: a field's verbose_name
and a model's Meta names written there are part of its migrations (a rename would be a migration
of every app), while these runtime names are not (Django keeps the original for migrations).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


def label(model: Any, name: Any, plural: Any, fields: Mapping[str, Any]) -> None:
    """Give `model` its names and its fields their labels (lazy translations: each request's language)."""
    model._meta.verbose_name = name
    model._meta.verbose_name_plural = plural
    for field_name, text in fields.items():
        model._meta.get_field(field_name).verbose_name = text
