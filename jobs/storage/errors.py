"""The error every storage check raises: what is wrong with a path (a message: jobs.storage.texts),
and the config field it came from (so pages and the API can name the field)."""

from __future__ import annotations

from catalogue import Message


class StorageError(ValueError):
    """A path the user may not use, with the config field it came from (for field errors);
    str() is the message in English."""

    def __init__(self, message: Message, field: str = ""):
        super().__init__(message.text)
        self.field = field
        self.message = message
