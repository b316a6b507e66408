"""The default FS: one area per user, on the admin's storage that holds the users' areas
(`StorageConfig.holds_user_areas`: NFS or a host path every node mounts, so the area follows a task
to any node), else in a directory under PAI_FS_ROOT on the portal's machine.

`PAI_DEFAULT_FS_URI` of a user is where tasks see their area: `<storage's mount path>/<user>`, or,
without such a storage, the absolute path of the area itself (tasks see it at that same path). So
`$PAI_DEFAULT_FS_URI/...` in dataDir / outputDir / codeDir works both here and inside a task.
Every path a user names is confined to their area: no `..`, no absolute path elsewhere on the
host, no symlink that leads out. `hdfs://` gets a clear "no HDFS configured".

The scheduler side calls `validate_job_paths()` at submit and `launch_mounts()` at launch; the
`fs` command and the upload page call `save_file()` / `list_dir()` / `remove()`.
"""

from __future__ import annotations

import os
import posixpath
import re
import shutil
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import IO, Any

from django.conf import settings

from clusters.executors.base import Mount
from clusters.models import StorageConfig
from jobs.storage.configs import storage_configs, storage_mount

CODE_DIR_MAX_BYTES = 200 * 1024 * 1024  # OpenPAI: "codeDir ... should be less than 200MB"
FS_URI_VARIABLE = re.compile(r"^\$(PAI_DEFAULT_FS_URI|\{PAI_DEFAULT_FS_URI\})(?=/|$)")
COPY_CHUNK = 1024 * 1024


class StorageError(ValueError):
    """A path the user may not use, with the config field it came from (for field errors)."""

    def __init__(self, message: str, field: str = ""):
        super().__init__(message)
        self.field = field
        self.message = message


@dataclass(frozen=True)
class StorePath:
    host: Path  # the real location on the node (symlinks resolved)
    visible: str  # the path the user wrote, expanded: what the task sees


@dataclass(frozen=True)
class Entry:
    name: str
    is_dir: bool
    size: int


# -- areas -------------------------------------------------------------------------------------


def area_storage() -> StorageConfig | None:
    """The storage that holds the users' areas (a launch asks several times per task: read from
    storage_configs(), at most every few seconds)."""
    return next((config for config in storage_configs() if config.holds_user_areas), None)


def fs_root() -> Path:
    """Where the portal's machine sees the users' areas."""
    storage = area_storage()
    root = Path(storage.portal_root if storage else settings.PAI_FS_ROOT).resolve()
    root.mkdir(parents=True, exist_ok=True)
    return root


def user_area(username: str) -> Path:
    if not username or username in {".", ".."} or "/" in username or "\0" in username:
        raise StorageError(f"{username!r} cannot own a storage area")
    area = fs_root() / username
    area.mkdir(mode=0o700, exist_ok=True)
    if area.stat().st_mode & 0o077:  # made before areas were private
        area.chmod(0o700)
    return area


def default_fs_uri(username: str) -> str:
    """The value of PAI_DEFAULT_FS_URI for this user's tasks (a plain absolute path): where tasks
    see the area."""
    storage = area_storage()
    area = user_area(username)
    return posixpath.join(storage.task_path, username) if storage else str(area)


# -- resolving what a user wrote ---------------------------------------------------------------


def resolve(username: str, uri: str, *, field: str = "") -> StorePath:
    """Map a config path (`$PAI_DEFAULT_FS_URI/x`, `x`, or an absolute path inside the area)."""
    area = user_area(username)
    seen = PurePosixPath(default_fs_uri(username))
    text = (uri or "").strip()
    if not text:
        raise StorageError("a path is required", field)
    if "\0" in text:
        raise StorageError(f"{uri!r}: a path cannot contain a NUL character", field)
    scheme = re.match(r"^([A-Za-z][A-Za-z0-9+.-]*)://", text)
    if scheme:
        if scheme.group(1).lower() in {"hdfs", "webhdfs", "viewfs"}:
            raise StorageError(
                f"{text}: no HDFS configured on this portal; use $PAI_DEFAULT_FS_URI/... (the portal's file store)",
                field,
            )
        raise StorageError(f"{text}: unsupported scheme {scheme.group(1)}://; use $PAI_DEFAULT_FS_URI/...", field)
    text = FS_URI_VARIABLE.sub(lambda _: str(seen), text)
    if "$" in text:
        raise StorageError(f"{uri}: only $PAI_DEFAULT_FS_URI may be used in a path", field)
    pure = PurePosixPath(text)
    if ".." in pure.parts:
        raise StorageError(f"{uri}: '..' is not allowed in a path", field)
    if pure.is_absolute():
        if pure != seen and seen not in pure.parents:
            raise StorageError(f"{uri}: outside your storage area ({seen}); use $PAI_DEFAULT_FS_URI/...", field)
        relative = pure.relative_to(seen)
    else:
        relative = pure
    real = (area / relative).resolve()
    if not _inside(real, area):
        raise StorageError(f"{uri}: a symbolic link leads outside your storage area", field)
    return StorePath(host=real, visible=str(seen / relative))


def expand_uri(username: str, uri: str) -> str:
    """`$PAI_DEFAULT_FS_URI/x` -> the absolute path (for PAI_DATA_DIR and friends); '' stays ''."""
    if not uri:
        return ""
    return FS_URI_VARIABLE.sub(lambda _: default_fs_uri(username), uri.strip())


def _inside(path: Path, area: Path) -> bool:
    return path == area or area in path.parents


# -- submit and launch -------------------------------------------------------------------------


def job_paths(spec: dict[str, Any]) -> dict[str, str]:
    """dataDir / outputDir / codeDir / authFile of a (v1) spec, those that are set."""
    v1 = ((spec.get("extras") or {}).get("v1")) or {}
    return {key: v1[key] for key in ("dataDir", "outputDir", "codeDir", "authFile") if v1.get(key)}


def validate_job_paths(username: str, spec: dict[str, Any]) -> list[tuple[str, str]]:
    """Field errors for the job's storage paths, checked at submit ([] when all is well)."""
    errors: list[tuple[str, str]] = []
    for field, uri in job_paths(spec).items():
        try:
            path = resolve(username, uri, field=field)
            if field in {"dataDir", "codeDir"} and not path.host.is_dir():
                raise StorageError(f"{uri}: no such directory in your storage area", field)
            if field == "authFile":
                read_auth_file(username, uri)
            if field == "outputDir" and path.host.exists() and not path.host.is_dir():
                raise StorageError(f"{uri}: exists and is not a directory", field)
            if field == "codeDir":
                check_code_size(path.host, field=field)
        except StorageError as exc:
            errors.append((field, exc.message))
    return errors


def launch_mounts(username: str, spec: dict[str, Any], code_copy_dir: Path, container_work_dir: str) -> list[Mount]:
    """The task's mounts: the user's area read-write at its own path ($PAI_DEFAULT_FS_URI), dataDir
    read-only over it, outputDir read-write (created), codeDir copied into `code_copy_dir` and
    mounted read-only at `<container_work_dir>/code`. Raises StorageError."""
    paths = job_paths(spec)
    area = user_area(username)
    mounts: list[Mount] = [_area_mount(username, area, default_fs_uri(username), read_only=False)]
    if "dataDir" in paths:
        data = resolve(username, paths["dataDir"], field="dataDir")
        if not data.host.is_dir():
            raise StorageError(f"{paths['dataDir']}: no such directory in your storage area", "dataDir")
        mounts.append(_area_mount(username, data.host, data.visible, read_only=True))
    if "outputDir" in paths:
        output = resolve(username, paths["outputDir"], field="outputDir")
        output.host.mkdir(parents=True, exist_ok=True)
        mounts.append(_area_mount(username, output.host, output.visible, read_only=False))
    if "codeDir" in paths:
        code = resolve(username, paths["codeDir"], field="codeDir")
        copy_code(code.host, Path(code_copy_dir))
        mounts.append(
            Mount(host_path=str(code_copy_dir), container_path=f"{container_work_dir.rstrip('/')}/code", read_only=True)
        )
    return mounts


def _area_mount(username: str, host: Path, visible: str, *, read_only: bool) -> Mount:
    """A folder of the user's area: from the storage that holds the areas, mounted by the node
    itself, or bind-mounted from the portal's machine."""
    storage = area_storage()
    if storage is None:
        return Mount(host_path=str(host), container_path=visible, read_only=read_only)
    inside = host.relative_to(user_area(username)).as_posix()
    subpath = username if inside == "." else f"{username}/{inside}"
    return storage_mount(storage, subpath, visible, read_only=read_only, shared=False)


def check_code_size(code_dir: Path, *, field: str = "codeDir", limit: int = CODE_DIR_MAX_BYTES) -> int:
    total = 0
    for file in _files(code_dir):
        total += file.lstat().st_size
        if total >= limit:
            raise StorageError(
                f"codeDir is over the {limit // (1024 * 1024)} MB limit: keep data in dataDir, code in codeDir", field
            )
    return total


def copy_code(code_dir: Path, destination: Path, *, limit: int = CODE_DIR_MAX_BYTES) -> None:
    """A fresh copy of the code (links copied as links: they resolve inside the container)."""
    if not code_dir.is_dir():
        raise StorageError(f"{code_dir}: no such directory", "codeDir")
    check_code_size(code_dir, limit=limit)
    if destination.exists():
        shutil.rmtree(destination)
    destination.parent.mkdir(parents=True, exist_ok=True)
    shutil.copytree(code_dir, destination, symlinks=True)


def read_auth_file(username: str, uri: str) -> dict[str, str]:
    """OpenPAI's authFile: three lines, registry / username / password."""
    path = resolve(username, uri, field="authFile")
    if not path.host.is_file():
        raise StorageError(f"{uri}: no such file in your storage area", "authFile")
    lines = [line.strip() for line in path.host.read_text(errors="replace").splitlines() if line.strip()]
    if len(lines) < 3:
        raise StorageError(f"{uri}: an authFile has three lines: registry, username, password", "authFile")
    registry = re.sub(r"^https?://", "", lines[0]).rstrip("/")
    return {"registry": registry, "username": lines[1], "password": lines[2]}


def _files(directory: Path) -> Iterator[Path]:
    for parent, _dirs, names in os.walk(directory, followlinks=False):
        for name in names:
            yield Path(parent) / name


# -- the store's own operations (fs command, upload page) --------------------------------------


def area_path(username: str, relative: str, *, root: Path | None = None) -> Path:
    """A path inside the area (or inside `root`, a storage's folder) from a relative name typed in
    the page or the command."""
    text = (relative or "").strip().strip("/")
    if root is None:
        return resolve(username, text).host if text else user_area(username)
    return _confined(root, text)


def _confined(root: Path, text: str) -> Path:
    root = root.resolve()
    if not text:
        return root
    pure = PurePosixPath(text)
    if "\0" in text or ".." in pure.parts:
        raise StorageError(f"{text}: '..' is not allowed in a path")
    real = (root / pure).resolve()
    if not _inside(real, root):
        raise StorageError(f"{text}: a symbolic link leads outside this storage")
    return real


def _base(username: str, root: Path | None) -> Path:
    return root.resolve() if root is not None else user_area(username)


def save_file(
    username: str, relative: str, chunks: Iterable[bytes], *, max_bytes: int | None = None, root: Path | None = None
) -> Path:
    """Write a file into the area (parents created); over max_bytes nothing is kept."""
    target = area_path(username, relative, root=root)
    if target == _base(username, root):
        raise StorageError("a file name is required")
    if target.is_dir():
        raise StorageError(f"{relative}: is a directory")
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
    except (FileExistsError, NotADirectoryError):
        folder = relative.rpartition("/")[0]
        raise StorageError(f"{folder}: is a file, not a folder") from None
    partial = target.with_name(f".{target.name}.uploading")
    written = 0
    try:
        with _open_new(partial) as out:
            for chunk in chunks:
                written += len(chunk)
                if max_bytes is not None and written > max_bytes:
                    raise StorageError(f"{relative}: over the upload limit of {max_bytes} bytes")
                out.write(chunk)
        os.replace(partial, target)
    finally:
        partial.unlink(missing_ok=True)
    return target


def copy_into(username: str, source: Path, relative: str) -> list[Path]:
    """Copy a local file or directory tree (the fs command's upload) into the area."""
    source = Path(source)
    if source.is_file():
        name = relative if relative and not relative.endswith("/") else f"{relative}{source.name}"
        return [save_file(username, name, _read_chunks(source))]
    if not source.is_dir():
        raise StorageError(f"{source}: no such file or directory")
    base = relative.rstrip("/") or source.name
    saved = []
    for file in sorted(_files(source)):
        if file.is_symlink():
            continue  # never follow a link out of what was named
        saved.append(save_file(username, f"{base}/{file.relative_to(source).as_posix()}", _read_chunks(file)))
    return saved


def list_dir(username: str, relative: str = "", *, root: Path | None = None) -> list[Entry]:
    directory = area_path(username, relative, root=root)
    if not directory.is_dir():
        raise StorageError(f"{relative}: no such directory")
    entries = []
    for child in sorted(directory.iterdir(), key=lambda p: (not p.is_dir(), p.name)):
        if child.name.endswith(".uploading"):
            continue
        info = child.lstat()
        entries.append(Entry(name=child.name, is_dir=child.is_dir(), size=0 if child.is_dir() else info.st_size))
    return entries


def file_to_read(username: str, relative: str, *, root: Path | None = None) -> Path:
    """A file of the area to download; StorageError when the name is not a file of the area."""
    target = area_path(username, relative, root=root)
    if not target.is_file():
        raise StorageError(f"{relative}: no such file in your storage area")
    return target


def files_under(username: str, relative: str, *, stop_at: int = 10_000, root: Path | None = None) -> int:
    """How many files a folder holds, all levels down (counted up to stop_at); 0 for a file."""
    target = area_path(username, relative, root=root)
    if not target.is_dir() or target.is_symlink():
        return 0
    count = 0
    for count, _file in enumerate(_files(target), 1):
        if count >= stop_at:
            break
    return count


def remove(username: str, relative: str, *, root: Path | None = None) -> None:
    target = area_path(username, relative, root=root)
    if target == _base(username, root):
        raise StorageError("refusing to remove your whole storage area")
    if not target.exists() and not target.is_symlink():
        raise StorageError(f"{relative}: no such file or directory")
    if target.is_dir() and not target.is_symlink():
        shutil.rmtree(target)
    else:
        target.unlink()


def _open_new(path: Path) -> IO[bytes]:
    """Open for writing without following a symlink planted at that name."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o644)
    return os.fdopen(fd, "wb")


def _read_chunks(path: Path) -> Iterator[bytes]:
    with open(path, "rb") as source:
        while chunk := source.read(COPY_CHUNK):
            yield chunk
