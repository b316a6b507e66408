"""Who may do what: the one admin rule every app uses."""

from typing import Any


def is_admin(user: Any) -> bool:
    """Staff and superusers administer the portal: they see and act on every user's jobs."""
    return bool(user is not None and user.is_authenticated and (user.is_staff or user.is_superuser))
