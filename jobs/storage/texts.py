"""What the storage checks say (jobs.storage, the storage page): a path a config or the page names,
an admin's storage a job asks for. Codes `storage.<what>`; `%(path)s` is the path as the user wrote
it (or as the walk found it)."""

from __future__ import annotations

from catalogue import Message, text_of

# What the no-follow walk (clusters.userfs) refuses, by its reason.
WALK_REASONS = {
    text.template.removeprefix("%(path)s: "): text
    for text in (
        text_of("storage.link_refused"),
        text_of("storage.not_found"),
        text_of("storage.not_a_folder"),
        text_of("storage.over_size_limit"),
        text_of("storage.is_a_directory"),
        text_of("storage.not_a_regular_file"),
        text_of("storage.walk_nul"),
        text_of("storage.absolute_path"),
        text_of("storage.dotdot"),
        text_of("storage.name_required"),
    )
}


def walk_refusal(path: str, reason: str) -> Message:
    """What the walk refused, for `path`: its reason as a message (as it said it, when new)."""
    text = WALK_REASONS.get(reason)
    return text(path=path) if text is not None else Message.of("storage.system_says", path=path, why=reason)
