"""The default FS: one area per user, on the admin's storage that holds the users' areas
(`StorageConfig.holds_user_areas`: NFS or a host path every node mounts, so the area follows a task
to any node), else in a directory under PAI_FS_ROOT on the portal's machine.

`PAI_DEFAULT_FS_URI` of a user is where tasks see their area: `<storage's mount path>/<user>`, or,
without such a storage, the absolute path of the area itself (tasks see it at that same path). So
`$PAI_DEFAULT_FS_URI/...` in dataDir / outputDir / codeDir works both here and inside a task.
Every path a user names is confined to their area: no `..`, no absolute path elsewhere on the
host. The area is a tree the user's own tasks write while the portal (root) works in it, so every
file operation goes through clusters.userfs: a descriptor walk down from the areas' root that never
follows a symbolic link (a link anywhere in a name is refused, naming the path). Paths are mapped
(`resolve()`) only to name them and to mount them; nothing is opened by them.
`hdfs://` gets a clear "no HDFS configured".

The scheduler side calls `validate_job_paths()` at submit and `launch_mounts()` at launch; the
`fs` command and the upload page call `save_file()` / `list_dir()` / `remove()`.
"""

from __future__ import annotations

import io
import os
import posixpath
import re
import stat
from collections.abc import Iterable, Iterator
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from django.conf import settings

from catalogue import Message
from clusters import userfs
from clusters.executors.base import Mount
from clusters.models import StorageConfig
from jobs.protocol.errors import FieldError
from jobs.protocol.spec import NormalizedSpec
from jobs.storage import texts
from jobs.storage.configs import storage_configs, storage_mount
from jobs.storage.errors import StorageError

CODE_DIR_MAX_BYTES = 200 * 1024 * 1024  # OpenPAI: "codeDir ... should be less than 200MB"
FS_URI_VARIABLE = re.compile(r"^\$(PAI_DEFAULT_FS_URI|\{PAI_DEFAULT_FS_URI\})(?=/|$)")
COPY_CHUNK = 1024 * 1024
AUTH_FILE_MAX_BYTES = 64 * 1024  # three short lines


@dataclass(frozen=True)
class StorePath:
    host: Path  # where it is on the node, by name (links in it are never followed: see clusters.userfs)
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
    """Where the portal's machine sees the users' areas (the admin's directory: the portal's own)."""
    storage = area_storage()
    root = Path(storage.portal_root if storage else settings.PAI_FS_ROOT).resolve()
    root.mkdir(parents=True, exist_ok=True)
    return root


def user_area(username: str) -> Path:
    with _area(username):
        pass
    return fs_root() / username


@contextmanager
def _area(username: str) -> Iterator[int]:
    """The user's area as a directory descriptor, opened from the areas' root without following
    a link; made (private) when missing, made private when it was made before areas were."""
    if not username or username in {".", ".."} or "/" in username or "\0" in username:
        raise StorageError(Message.of("storage.no_owner", name=username.replace("\0", "\\0")))
    with _refusals(username), userfs.opened_root(fs_root()) as top:
        area = userfs.open_dir(top, username, create=True, mode=0o700)
    with _held(area):
        if os.fstat(area).st_mode & 0o077:
            os.fchmod(area, 0o700)
        yield area  # (what the caller's block raises is its own to word: not turned into _refusals' words here)


def default_fs_uri(username: str) -> str:
    """The value of PAI_DEFAULT_FS_URI for this user's tasks (a plain absolute path): where tasks
    see the area."""
    storage = area_storage()
    area = user_area(username)
    return posixpath.join(storage.task_path, username) if storage else str(area)


@contextmanager
def _refusals(shown: str, field: str = "") -> Iterator[None]:
    """What the file walk refuses or the system fails to do, as a StorageError naming the path (a
    page answers it with a 4xx, a launch fails the job with it)."""
    try:
        yield
    except userfs.UserFsError as exc:
        raise StorageError(texts.walk_refusal(exc.path, exc.reason), field) from exc
    except OSError as exc:
        raise StorageError(
            Message.of("storage.system_says", path=shown or ".", why=str(exc.strerror or exc)), field
        ) from exc
    except RecursionError:  # a tree nested deeper than any walk goes
        raise StorageError(Message.of("storage.nested_too_deep", path=shown or "."), field) from None


# -- resolving what a user wrote ---------------------------------------------------------------


def _locate(username: str, uri: str, *, field: str = "") -> tuple[PurePosixPath, str]:
    """A config path (`$PAI_DEFAULT_FS_URI/x`, `x`, or an absolute path inside the area): its name
    relative to the area, and the path the task sees."""
    seen = PurePosixPath(default_fs_uri(username))
    text = (uri or "").strip()
    if not text:
        raise StorageError(Message.of("storage.path_required"), field)
    if "\0" in text:
        raise StorageError(Message.of("storage.nul", path=uri.replace("\0", "\\0")), field)
    scheme = re.match(r"^([A-Za-z][A-Za-z0-9+.-]*)://", text)
    if scheme:
        if scheme.group(1).lower() in {"hdfs", "webhdfs", "viewfs"}:
            raise StorageError(Message.of("storage.no_hdfs", path=text), field)
        raise StorageError(Message.of("storage.scheme", path=text, scheme=scheme.group(1)), field)
    text = FS_URI_VARIABLE.sub(lambda _: str(seen), text)
    if "$" in text:
        raise StorageError(Message.of("storage.variable", path=uri), field)
    pure = PurePosixPath(text)
    if ".." in pure.parts:
        raise StorageError(Message.of("storage.dotdot", path=uri), field)
    if pure.is_absolute():
        if pure != seen and seen not in pure.parents:
            raise StorageError(Message.of("storage.outside", path=uri, area=str(seen)), field)
        relative = pure.relative_to(seen)
    else:
        relative = pure
    return relative, str(seen / relative)


def resolve(username: str, uri: str, *, field: str = "") -> StorePath:
    """Map a config path to where it is on the host and where the task sees it, by its name alone:
    for messages and mounts only. Nothing here touches the file system, whose names the user's
    tasks may swap at any moment; every file operation walks the area with clusters.userfs, which
    refuses links."""
    relative, visible = _locate(username, uri, field=field)
    return StorePath(host=user_area(username) / relative, visible=visible)


def expand_uri(username: str, uri: str) -> str:
    """`$PAI_DEFAULT_FS_URI/x` -> the absolute path (for PAI_DATA_DIR and friends); '' stays ''."""
    if not uri:
        return ""
    return FS_URI_VARIABLE.sub(lambda _: default_fs_uri(username), uri.strip())


def open_area_folder(username: str, uri: str) -> int | None:
    """A new descriptor of a folder of the user's area named as a config names it (an outputDir:
    what a task left there is read by it), walked down without following a link; the caller
    closes it. None when there is no such folder (yet), or the walk was refused."""
    try:
        relative = _locate(username, uri)[0]
        with _area(username) as area:
            return userfs.open_dir(area, relative)
    except (StorageError, userfs.UserFsError, OSError):
        return None


def _inside(path: Path, area: Path) -> bool:
    return path == area or area in path.parents


# -- submit and launch -------------------------------------------------------------------------


def job_paths(spec: NormalizedSpec) -> dict[str, str]:
    """dataDir / outputDir / codeDir / authFile of a (v1) spec, those that are set."""
    v1 = ((spec.get("extras") or {}).get("v1")) or {}
    paths = {
        "dataDir": v1.get("dataDir"),
        "outputDir": v1.get("outputDir"),
        "codeDir": v1.get("codeDir"),
        "authFile": v1.get("authFile"),
    }
    return {key: path for key, path in paths.items() if path}


def validate_job_paths(username: str, spec: NormalizedSpec) -> list[FieldError]:
    """Field errors for the job's storage paths, checked at submit ([] when all is well)."""
    errors: list[FieldError] = []
    for field, uri in job_paths(spec).items():
        try:
            resolve(username, uri, field=field)
            relative = _locate(username, uri, field=field)[0]
            with _refusals(uri, field), _area(username) as area:
                if field in {"dataDir", "codeDir"}:
                    with _existing_dir(area, relative, uri, field) as directory:
                        if field == "codeDir":
                            _check_code_size(directory, field, CODE_DIR_MAX_BYTES)
                if field == "authFile":
                    read_auth_file(username, uri)
                if field == "outputDir":
                    found = userfs.lstat(area, relative)
                    if found is not None and not stat.S_ISDIR(found.st_mode):
                        raise StorageError(Message.of("storage.not_a_directory", path=uri), field)
        except StorageError as exc:
            errors.append((field, exc.message))
    return errors


def _existing_dir(base: int, relative: PurePosixPath, uri: str, field: str) -> AbstractContextManager[int]:
    """A directory of the user's area (`base`), held open."""
    return _held(
        _open_existing(base, relative, StorageError(Message.of("storage.no_directory_in_area", path=uri), field))
    )


def _open_existing(base: int, relative: str | PurePosixPath, missing: StorageError) -> int:
    """A new descriptor of the directory `relative` below `base`, or `missing` raised when there is none."""
    try:
        return userfs.open_dir(base, relative)
    except (userfs.NotFound, userfs.NotAFolder):
        raise missing from None


@contextmanager
def _held(fd: int) -> Iterator[int]:
    """An open descriptor, closed when the block ends."""
    try:
        yield fd
    finally:
        os.close(fd)


def launch_mounts(username: str, spec: NormalizedSpec, code_copy_dir: Path, container_work_dir: str) -> list[Mount]:
    """The task's mounts: the user's area read-write at its own path ($PAI_DEFAULT_FS_URI), dataDir
    read-only over it, outputDir read-write (created), codeDir copied into `code_copy_dir` and
    mounted read-only at `<container_work_dir>/code`. Raises StorageError."""
    paths = job_paths(spec)
    area_path = user_area(username)
    mounts: list[Mount] = [_area_mount(username, area_path, default_fs_uri(username), read_only=False)]
    if "dataDir" in paths:
        uri = paths["dataDir"]
        data = resolve(username, uri, field="dataDir")
        with (
            _refusals(uri, "dataDir"),
            _area(username) as area,
            _existing_dir(area, _locate(username, uri)[0], uri, "dataDir"),
        ):
            pass
        mounts.append(_area_mount(username, data.host, data.visible, read_only=True))
    if "outputDir" in paths:
        uri = paths["outputDir"]
        output = resolve(username, uri, field="outputDir")
        with _refusals(uri, "outputDir"), _area(username) as area:
            os.close(userfs.open_dir(area, _locate(username, uri)[0], create=True))
        mounts.append(_area_mount(username, output.host, output.visible, read_only=False))
    if "codeDir" in paths:
        uri = paths["codeDir"]
        resolve(username, uri, field="codeDir")
        relative = _locate(username, uri)[0]
        with _refusals(uri, "codeDir"), _area(username) as area, _existing_dir(area, relative, uri, "codeDir") as code:
            _copy_code(code, Path(code_copy_dir), CODE_DIR_MAX_BYTES, shown=uri)
        # (Its parent, the job's folder of the work root, is written by the portal alone.)
        code_copy = Path(os.path.abspath(code_copy_dir))
        mounts.append(
            Mount(
                host_path=str(code_copy),
                container_path=f"{container_work_dir.rstrip('/')}/code",
                read_only=True,
                beneath=str(code_copy.parent),
            )
        )
    return mounts


def _area_mount(username: str, host: Path, visible: str, *, read_only: bool) -> Mount:
    """A folder of the user's area: from the storage that holds the areas, mounted by the node
    itself, or bind-mounted from the portal's machine (an executor reaches it from the areas' root
    without following a link: the user's tasks write the area while it mounts)."""
    storage = area_storage()
    if storage is None:
        return Mount(host_path=str(host), container_path=visible, read_only=read_only, beneath=str(fs_root()))
    inside = host.relative_to(user_area(username)).as_posix()
    subpath = username if inside == "." else f"{username}/{inside}"
    return storage_mount(storage, subpath, visible, read_only=read_only, shared=False)


def _code_too_big(limit: int, field: str) -> StorageError:
    return StorageError(Message.of("storage.code_too_big", mb=limit // (1024 * 1024)), field)


def _check_code_size(directory: int, field: str, limit: int) -> int:
    total = 0
    for _relative, _parent, _name, info in userfs.walk(directory):
        if stat.S_ISREG(info.st_mode):
            total += info.st_size
            if total >= limit:
                raise _code_too_big(limit, field)
    return total


def copy_code(code_dir: Path, destination: Path, *, limit: int = CODE_DIR_MAX_BYTES) -> None:
    """A fresh copy of a code directory of an area (a host path below the areas' root) at
    `destination` (below PAI_WORK_ROOT)."""
    with _in_areas(code_dir, "codeDir") as directory:
        _copy_code(directory, Path(destination), limit, shown=str(code_dir))


def _copy_code(code: int, destination: Path, limit: int, *, shown: str) -> None:
    """Copy the code (links copied as links: they resolve inside the container) from its open
    directory into a new directory made through a walk from PAI_WORK_ROOT (a retried task's work
    dir is its own, so a copy there is never made by path). The limit holds for what is read."""
    _check_code_size(code, "codeDir", limit)
    with _refusals(str(destination), "codeDir"), _work_parent(destination) as (parent, name):
        if userfs.lstat(parent, name) is not None:
            userfs.remove_at(parent, name)
        os.mkdir(name, 0o755, dir_fd=parent)
        with userfs.directory(parent, name) as copy:
            try:
                userfs.copy_tree(code, copy, limit=limit, prefix=f"{shown.rstrip('/')}/")
            except userfs.TooLarge:
                raise _code_too_big(limit, "codeDir") from None


def _in_areas(host: Path, field: str) -> AbstractContextManager[int]:
    """A directory of an area given as a host path: walked from the areas' root, held open (what
    the caller's block raises is its own to word: outside _refusals)."""
    root = fs_root()
    absolute = Path(os.path.abspath(host))
    if not _inside(absolute, root):
        raise StorageError(Message.of("storage.not_in_area", path=str(host)), field)
    missing = StorageError(Message.of("storage.no_directory", path=str(host)), field)
    with _refusals(str(host), field), userfs.opened_root(root) as top:
        return _held(_open_existing(top, absolute.relative_to(root).as_posix(), missing))


@contextmanager
def _work_parent(destination: Path) -> Iterator[tuple[int, str]]:
    """The folder to hold `destination` and its name, walked (and made) from PAI_WORK_ROOT; a
    destination elsewhere (a tool's, a test's) from its own parent, which its caller owns."""
    work_root = Path(os.path.abspath(settings.PAI_WORK_ROOT))
    absolute = Path(os.path.abspath(destination))
    root, relative = (
        (work_root, absolute.relative_to(work_root).as_posix())
        if work_root in absolute.parents
        else (absolute.parent, absolute.name)
    )
    root.mkdir(parents=True, exist_ok=True)
    with userfs.opened_root(root) as top, userfs.parent_of(top, relative, create=True) as found:
        yield found


def read_auth_file(username: str, uri: str) -> dict[str, str]:
    """OpenPAI's authFile: three lines, registry / username / password."""
    resolve(username, uri, field="authFile")
    relative = _locate(username, uri, field="authFile")[0]
    with _refusals(uri, "authFile"), _area(username) as area:
        try:
            data = userfs.read_bytes(area, relative, limit=AUTH_FILE_MAX_BYTES)
        except (userfs.NotFound, userfs.NotAFolder):
            raise StorageError(Message.of("storage.no_file_in_area", path=uri), "authFile") from None
        except userfs.NotAFile as exc:
            raise StorageError(texts.walk_refusal(uri, exc.reason), "authFile") from None
    lines = [line.strip() for line in data.decode(errors="replace").splitlines() if line.strip()]
    if len(lines) < 3:
        raise StorageError(Message.of("storage.auth_file_lines", path=uri), "authFile")
    registry = re.sub(r"^https?://", "", lines[0]).rstrip("/")
    return {"registry": registry, "username": lines[1], "password": lines[2]}


# -- the store's own operations (fs command, upload page) --------------------------------------


def area_path(username: str, relative: str, *, root: Path | None = None) -> Path:
    """Where a name typed in the page or the command is on the host (to name it: nothing opens
    it by this path)."""
    return _base(username, root) / _typed(username, relative, root)


def _typed(username: str, relative: str, root: Path | None) -> PurePosixPath:
    """A name typed in the page or the command, relative to the area (or to `root`, a storage's folder)."""
    text = (relative or "").strip().strip("/")
    if not text:
        return PurePosixPath(".")
    if root is None:
        return _locate(username, text)[0]
    pure = PurePosixPath(text)
    if "\0" in text or ".." in pure.parts:
        raise StorageError(Message.of("storage.dotdot", path=text.replace("\0", "\\0")))
    return pure


def _base(username: str, root: Path | None) -> Path:
    return Path(os.path.realpath(root)) if root is not None else user_area(username)


@contextmanager
def _tree(username: str, root: Path | None) -> Iterator[int]:
    """The directory every typed name is below: the user's area, or a storage's folder."""
    if root is None:
        with _area(username) as area:
            yield area
        return
    with _refusals(str(root)):
        top = os.open(os.path.realpath(root), userfs.DIR_FLAGS)
    try:
        yield top
    finally:
        os.close(top)


def save_file(
    username: str, relative: str, chunks: Iterable[bytes], *, max_bytes: int | None = None, root: Path | None = None
) -> Path:
    """Write a file into the area (parents created); over max_bytes nothing is kept."""
    name = _typed(username, relative, root)
    if name == PurePosixPath("."):
        raise StorageError(Message.of("storage.file_name_required"))

    def limited() -> Iterator[bytes]:
        written = 0
        for chunk in chunks:
            written += len(chunk)
            if max_bytes is not None and written > max_bytes:
                raise StorageError(Message.of("storage.over_upload_bytes", path=relative, limit=max_bytes))
            yield chunk

    with (
        _refusals(relative),
        _tree(username, root) as base,
        userfs.parent_of(base, name, create=True) as (parent, leaf),
    ):
        found = userfs.lstat(parent, leaf)
        if found is not None and stat.S_ISDIR(found.st_mode):
            raise StorageError(Message.of("storage.is_a_directory", path=relative))
        if found is not None and stat.S_ISLNK(found.st_mode):
            raise userfs.LinkRefused(str(name))
        userfs.write_file_at(parent, leaf, limited(), shown=str(name))
    return _base(username, root) / name


def copy_into(username: str, source: Path, relative: str) -> list[Path]:
    """Copy a local file or directory tree (the fs command's upload) into the area; links in the
    tree are left out (never followed out of what was named)."""
    source = Path(os.path.realpath(source))
    with _refusals(str(source)):
        if source.is_file():
            name = relative if relative and not relative.endswith("/") else f"{relative}{source.name}"
            with userfs.opened_root(source.parent) as parent:
                return [save_file(username, name, _chunks(userfs.open_file_at(parent, source.name)))]
        if not source.is_dir():
            raise StorageError(Message.of("storage.not_found", path=str(source)))
        base = relative.rstrip("/") or source.name
        with userfs.opened_root(source) as top:
            names = [name for name, _parent, _leaf, info in userfs.walk(top) if stat.S_ISREG(info.st_mode)]
            return [save_file(username, f"{base}/{name}", _chunks(userfs.open_file(top, name))) for name in names]


def list_dir(username: str, relative: str = "", *, root: Path | None = None) -> list[Entry]:
    name = _typed(username, relative, root)
    with _refusals(relative), _tree(username, root) as base:
        try:
            found = userfs.list_dir(base, name)
        except (userfs.NotFound, userfs.NotAFolder):
            raise StorageError(Message.of("storage.no_directory", path=relative)) from None
    entries = [
        Entry(name=child, is_dir=stat.S_ISDIR(info.st_mode), size=0 if stat.S_ISDIR(info.st_mode) else info.st_size)
        for child, info in found
        if not child.endswith(userfs.PARTIAL_SUFFIX)
    ]
    return sorted(entries, key=lambda entry: (not entry.is_dir, entry.name))


def file_to_read(username: str, relative: str, *, root: Path | None = None) -> io.FileIO:
    """A file of the area to download, open for reading (`.name`: the file's own name): what was
    checked is what is read. StorageError when the name is not a regular file of the area."""
    name = _typed(username, relative, root)
    missing = StorageError(Message.of("storage.no_file_in_area", path=relative))
    if name == PurePosixPath("."):
        raise missing
    with _refusals(relative), _tree(username, root) as base:
        try:
            return userfs.open_file(base, name)
        except (userfs.NotFound, userfs.NotAFolder):
            raise missing from None
        except userfs.NotAFile as exc:
            raise missing if exc.is_directory else StorageError(texts.walk_refusal(exc.path, exc.reason)) from None


def files_under(username: str, relative: str, *, stop_at: int = 10_000, root: Path | None = None) -> int:
    """How many files a folder holds, all levels down (counted up to stop_at); 0 for a file (and
    for a name the delete itself will refuse)."""
    name = _typed(username, relative, root)
    count = 0
    with _refusals(relative), _tree(username, root) as base:
        try:
            folder = userfs.open_dir(base, name)
        except userfs.UserFsError:
            return 0
        try:
            for _name, _parent, _leaf, info in userfs.walk(folder):
                if not stat.S_ISDIR(info.st_mode):
                    count += 1
                    if count >= stop_at:
                        break
        finally:
            os.close(folder)
    return count


def remove(username: str, relative: str, *, root: Path | None = None) -> None:
    """Remove a file, a folder with everything in it, or a link (the link itself: nothing is
    followed, so what a link points at is never touched)."""
    name = _typed(username, relative, root)
    if name == PurePosixPath("."):
        raise StorageError(Message.of("storage.remove_area"))
    with _refusals(relative), _tree(username, root) as base:
        try:
            with userfs.parent_of(base, name) as (parent, leaf):
                userfs.remove_at(parent, leaf, shown=str(name))
        except userfs.NotFound:
            raise StorageError(Message.of("storage.not_found", path=relative)) from None


def _chunks(file: io.FileIO) -> Iterator[bytes]:
    with file:
        while chunk := file.read(COPY_CHUNK):
            yield chunk
