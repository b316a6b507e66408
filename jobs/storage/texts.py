"""What the storage checks say (jobs.storage, the storage page): a path a config or the page names,
an admin's storage a job asks for. Codes `storage.<what>`; `%(path)s` is the path as the user wrote
it (or as the walk found it)."""

from __future__ import annotations

from catalogue import Message, table

# What the no-follow walk (clusters.userfs) refuses, by its reason.
WALK_REASONS = table("storage.")


def walk_refusal(path: str, reason: str) -> Message:
    """What the walk refused, for `path`: its reason as a message (as it said it, when new)."""
    text = WALK_REASONS.get(reason)
    return text(path=path) if text is not None else Message.of("storage.system_says", path=path, why=reason)
