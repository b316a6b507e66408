"""Sharing a template or an app with a group: its owner picks one of their own groups, whose
members may then use it (a template) or open it (an app); the owner alone changes it. A member who
leaves the group loses it at once: every check reads the membership anew."""

from __future__ import annotations

from typing import Any

from django.contrib.auth.models import Group
from django.db.models import QuerySet

from catalogue import Message
from jobs.protocol import JobConfigError


def groups_of(user: Any) -> QuerySet[Group]:
    """The groups a user may share with: their own, by name."""
    return Group.objects.filter(user=user).order_by("name")


def group_to_share_with(owner: Any, name: str | None, field: str) -> Group | None:
    """The owner's group of this name (None for no name: not shared); raises JobConfigError naming
    `field` for a group the owner is not in (or that does not exist: the same to them)."""
    name = (name or "").strip()
    if not name:
        return None
    group = groups_of(owner).filter(name=name).first()
    if group is None:
        raise JobConfigError([(field, Message.of("template.share_group", group=name))])
    return group
