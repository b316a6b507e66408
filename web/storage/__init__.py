"""The storage page and its file operations (the storage itself: jobs.storage)."""
