"""The storage page: browse, upload into and delete from one's own area of the default FS.

Thin: it checks the size limit and hands paths to jobs.storage, which confines them to the
signed-in user's area.
"""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.files.uploadhandler import FileUploadHandler, StopUpload
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import render
from django.urls import reverse
from django.utils.http import urlencode
from django.views.decorators.csrf import csrf_exempt, csrf_protect

from jobs import storage
from jobs.storage import StorageError


def upload_limit() -> int:
    return int(getattr(settings, "PAI_FS_UPLOAD_MAX_BYTES", 200 * 1024 * 1024))


class SizeLimitHandler(FileUploadHandler):
    """Stops reading an upload as soon as it passes the limit (before it fills a temp file)."""

    def __init__(self, request: HttpRequest, limit: int):
        super().__init__(request)
        self.limit = limit
        self.received = 0
        self.exceeded = False

    def receive_data_chunk(self, raw_data: bytes, start: int) -> bytes | None:
        self.received += len(raw_data)
        if self.received > self.limit:
            self.exceeded = True
            raise StopUpload(connection_reset=False)
        return raw_data

    def file_complete(self, file_size: int) -> None:
        return None


@csrf_exempt  # the upload handler must be in place before the CSRF check reads the body
@login_required
def storage_page(request: HttpRequest) -> HttpResponse:
    limiter = SizeLimitHandler(request, upload_limit())
    request.upload_handlers = [limiter, *request.upload_handlers]
    return _storage_page(request, limiter)


@csrf_protect
def _storage_page(request: HttpRequest, limiter: SizeLimitHandler) -> HttpResponse:
    username = request.user.get_username()
    path = (request.GET.get("path") or request.POST.get("path") or "").strip().strip("/")
    if request.method == "POST":
        try:
            _post(request, username, path, limiter)
        except StorageError as exc:
            messages.error(request, exc.message)
        return HttpResponseRedirect(f"{reverse('storage:browse')}?{urlencode({'path': path})}")
    context: dict[str, Any] = {
        "path": path,
        "parent": path.rpartition("/")[0],
        "fs_uri_path": f"$PAI_DEFAULT_FS_URI/{path}".rstrip("/"),
        "area": storage.default_fs_uri(username),
        "limit_mb": upload_limit() // (1024 * 1024),
    }
    try:
        context["entries"] = storage.list_dir(username, path)
    except StorageError as exc:
        context["entries"] = []
        context["error"] = exc.message
    return render(request, "jobs/storage.html", context, status=400 if "error" in context else 200)


def _post(request: HttpRequest, username: str, path: str, limiter: SizeLimitHandler) -> None:
    if content_length(request) > upload_limit() + 64 * 1024 or limiter.exceeded:
        raise StorageError(f"the upload is over the limit of {upload_limit() // (1024 * 1024)} MB")
    action = request.POST.get("action")
    if action == "delete":
        name = request.POST.get("name", "")
        storage.remove(username, f"{path}/{name}" if path else name)
        messages.success(request, f"Removed {name}.")
        return
    if action == "upload":
        files = request.FILES.getlist("files")
        if not files:
            raise StorageError("choose at least one file to upload")
        for uploaded in files:
            name = (uploaded.name or "").replace("\\", "/").rsplit("/", 1)[-1]
            storage.save_file(username, f"{path}/{name}" if path else name, uploaded.chunks(), max_bytes=upload_limit())
        messages.success(request, f"Uploaded {len(files)} file(s).")
        return
    raise StorageError("unknown action")


def content_length(request: HttpRequest) -> int:
    try:
        return int(request.META.get("CONTENT_LENGTH") or 0)
    except ValueError:
        return 0
