"""How big a request body may be, by path: the storage page's uploads may be as big as
PAI_FS_UPLOAD_MAX_BYTES, every other body PAI_MAX_BODY_BYTES (Django's DATA_UPLOAD_MAX_MEMORY_SIZE).

Shared by the serving layer (pai_portal.serving: it stops reading a body past its limit) and
BodyTooLargeMiddleware (the 413 answer, a page for the pages, `{code, message}` for the API)."""

from __future__ import annotations

from django.conf import settings

UPLOAD_PATHS = ("/storage/",)
MULTIPART_SLACK_BYTES = 1024 * 1024  # the form's other fields and the parts' headers around the files
API_PREFIXES = ("/api/", "/rest-server/api/")
TOO_LARGE_ENVIRON_KEY = "pai.body_too_large"


def body_limit(path: str) -> int:
    if path in UPLOAD_PATHS:
        return max(
            int(settings.PAI_FS_UPLOAD_MAX_BYTES) + MULTIPART_SLACK_BYTES, int(settings.DATA_UPLOAD_MAX_MEMORY_SIZE)
        )
    return int(settings.DATA_UPLOAD_MAX_MEMORY_SIZE)


def is_api(path: str) -> bool:
    return path.startswith(API_PREFIXES)
