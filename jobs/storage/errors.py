"""The error every storage check raises: what is wrong with a path, and the config field it came
from (so pages and the API can name the field)."""

from __future__ import annotations


class StorageError(ValueError):
    """A path the user may not use, with the config field it came from (for field errors)."""

    def __init__(self, message: str, field: str = ""):
        super().__init__(message)
        self.field = field
        self.message = message
