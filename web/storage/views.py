"""The storage page: browse, upload into, download from and delete in one's own area of the
default FS, or in any storage the user may use that the portal's machine mounts (`?storage=`).

Thin: it checks the size limit and hands paths to jobs.storage, which confines them to the
signed-in user's area or to the storage's folder (jobs.storage.configs.browsable).
"""

from __future__ import annotations

from typing import Any
from urllib.parse import quote

from django.conf import settings
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.files.uploadhandler import FileUploadHandler, StopUpload
from django.http import FileResponse, Http404, HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import render
from django.urls import reverse
from django.utils.http import urlencode
from django.utils.translation import gettext as _
from django.utils.translation import ngettext
from django.views.decorators.csrf import csrf_exempt, csrf_protect
from django.views.decorators.http import require_GET

from catalogue import Message
from jobs.storage import areas as storage
from jobs.storage.areas import StorageError
from jobs.storage.configs import Browsable, StorageForbidden, StorageNotFound, browsable, browsable_storages
from web.texts import translated


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


def _joined(path: str, name: str) -> str:
    return f"{path}/{name}" if path else name


def _browsed(request: HttpRequest) -> Browsable:
    name = (request.GET.get("storage") or request.POST.get("storage") or "").strip()
    try:
        return browsable(request.user, name)
    except (StorageNotFound, StorageForbidden) as exc:
        raise Http404(str(exc)) from exc


def _here(where: Browsable, path: str) -> str:
    """The page's own address for a folder."""
    query = {"storage": where.name, "path": path} if where.name else {"path": path}
    return f"{reverse('storage:browse')}?{urlencode(query)}"


@csrf_protect
def _storage_page(request: HttpRequest, limiter: SizeLimitHandler) -> HttpResponse:
    username = request.user.get_username()
    where = _browsed(request)
    path = (request.GET.get("path") or request.POST.get("path") or "").strip().strip("/")
    if request.method == "POST":
        try:
            confirm = _post(request, username, where, path, limiter)
        except StorageError as exc:
            messages.error(request, translated(exc.message))
        else:
            if confirm is not None:
                return confirm
        return HttpResponseRedirect(_here(where, path))
    context: dict[str, Any] = {
        "where": where,
        "storage_q": f"storage={quote(where.name)}&" if where.name else "",
        "storages": browsable_storages(request.user),
        "path": path,
        "parent": path.rpartition("/")[0],
        "crumbs": _crumbs(path),
        "fs_uri_path": f"{where.config_path}/{path}".rstrip("/"),
        "area": storage.default_fs_uri(username),
        "limit_mb": upload_limit() // (1024 * 1024),
    }
    try:
        context["entries"] = storage.list_dir(username, path, root=where.root)
    except StorageError as exc:
        context["entries"] = []
        context["error"] = translated(exc.message)
    return render(request, "jobs/storage.html", context, status=400 if "error" in context else 200)


def _crumbs(path: str) -> list[tuple[str, str]]:
    """(name, path) of each folder from the area down to this one."""
    parts = [part for part in path.split("/") if part]
    return [(part, "/".join(parts[: depth + 1])) for depth, part in enumerate(parts)]


def _post(
    request: HttpRequest, username: str, where: Browsable, path: str, limiter: SizeLimitHandler
) -> HttpResponse | None:
    """Carry out an upload or a delete; a page to show instead of the folder (a confirmation), or None."""
    if content_length(request) > upload_limit() + 64 * 1024 or limiter.exceeded:
        raise StorageError(Message.of("storage.upload_too_big", limit=upload_limit() // 2**20))
    if not where.writable:
        raise StorageError(Message.of("storage.read_only", name=where.name))
    action = request.POST.get("action")
    if action == "delete":
        name = request.POST.get("name", "")
        inside = storage.files_under(username, _joined(path, name), root=where.root)
        # Nothing deleted comes back: every delete is confirmed first.
        if request.POST.get("confirm") != "yes":
            context = {"where": where, "path": path, "name": name, "files": inside}
            return render(request, "jobs/storage_delete.html", context)
        storage.remove(username, _joined(path, name), root=where.root)
        messages.success(request, _("Removed %(name)s.") % {"name": name})
        return None
    if action == "upload":
        files = request.FILES.getlist("files")
        if not files:
            raise StorageError(Message.of("storage.choose_file"))
        for uploaded in files:
            name = (uploaded.name or "").replace("\\", "/").rsplit("/", 1)[-1]
            storage.save_file(
                username, _joined(path, name), uploaded.chunks(), max_bytes=upload_limit(), root=where.root
            )
        count = len(files)
        messages.success(
            request, ngettext("Uploaded %(count)d file.", "Uploaded %(count)d files.", count) % {"count": count}
        )
        return None
    raise StorageError(Message.of("storage.unknown_action"))


@login_required
@require_GET
def storage_download(request: HttpRequest) -> FileResponse:
    """One file of the user's own area, or of a storage they may use, as a download."""
    relative = (request.GET.get("path") or "").strip().strip("/")
    where = _browsed(request)
    try:
        opened = storage.file_to_read(request.user.get_username(), relative, root=where.root)
    except StorageError as exc:
        raise Http404(translated(exc.message)) from exc
    # Streams the very file the walk checked (never opened again by its name).
    return FileResponse(opened, as_attachment=True, filename=str(opened.name))


def content_length(request: HttpRequest) -> int:
    try:
        return int(request.META.get("CONTENT_LENGTH") or 0)
    except ValueError:
        return 0
