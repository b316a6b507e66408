"""Who may do what: the one admin rule every app uses, and the one "named by users or groups" rule
that VCs and storages use."""

from collections.abc import Iterable
from typing import Any


def is_admin(user: Any) -> bool:
    """Staff and superusers administer the portal: they see and act on every user's jobs. An admin
    group's members are staff (accounts.groups.apply_admin)."""
    return bool(user is not None and user.is_authenticated and (user.is_staff or user.is_superuser))


def group_ids_of(user: Any) -> frozenset[int]:
    """The user's groups, read once per user object (a request's user asks for many VCs)."""
    if not getattr(user, "is_authenticated", False):
        return frozenset()
    cached = user.__dict__.get("_pai_group_ids")
    if cached is None:
        cached = user.__dict__["_pai_group_ids"] = frozenset(user.groups.values_list("id", flat=True))
    return cached


def is_named(user: Any, users: Iterable[Any], groups: Iterable[Any]) -> bool:
    """True when nothing is named (open to all), or the user is named or is in a named group."""
    users, groups = list(users), list(groups)
    if not users and not groups:
        return True
    if any(member.pk == user.pk for member in users):
        return True
    return bool(groups) and bool(group_ids_of(user) & {group.pk for group in groups})
