"""File operations the portal (root) does below a directory a user's task can write.

One rule: such a path is never opened, created, listed, copied, removed or chowned by its name.
The portal opens a directory it owns itself (the users' areas' root, a storage's folder, the
tasks' work root) by path, then walks down one component at a time with
`openat(parent, name, O_DIRECTORY | O_NOFOLLOW)` and does each operation relative to the directory
descriptor it holds (`*at` calls). A task that swaps any component for a symbolic link, mid-walk
or between two operations, gets a refusal naming the path, never the link's target: the kernel
does not follow a link at any step. Files are only ever read if they are regular files (checked on
a descriptor that cannot block or touch a device before it is opened for reading), and written
under a fresh name created with O_EXCL, then renamed into place inside the directory already held.

Standard library only: the process executor's sandbox (clusters.executors.sandbox) and the
portal's file store (jobs.storage) both use it.
"""

from __future__ import annotations

import io
import os
import secrets
import stat
from collections.abc import Iterable, Iterator
from contextlib import contextmanager, suppress
from pathlib import PurePosixPath

DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
NEW_FILE_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
PARTIAL_SUFFIX = ".uploading"  # what a half-written file's name ends with (listings hide them)
CHUNK = 1024 * 1024


class UserFsError(ValueError):
    """An operation refused or impossible; `path` is the name (relative to the walk's root) at fault."""

    def __init__(self, path: str, reason: str):
        super().__init__(f"{path}: {reason}")
        self.path = path
        self.reason = reason  # (jobs.storage.texts words it by this)


class LinkRefused(UserFsError):
    def __init__(self, path: str):
        super().__init__(path, "is a symbolic link; links are not followed")


class NotFound(UserFsError):
    def __init__(self, path: str):
        super().__init__(path, "no such file or directory")


class NotAFolder(UserFsError):
    def __init__(self, path: str):
        super().__init__(path, "is a file, not a folder")


class TooLarge(UserFsError):
    def __init__(self, path: str):
        super().__init__(path, "over the size limit")


class NotAFile(UserFsError):
    def __init__(self, path: str, info: os.stat_result):
        self.is_directory = stat.S_ISDIR(info.st_mode)
        super().__init__(path, "is a directory" if self.is_directory else "is not a regular file")


# -- names ---------------------------------------------------------------------------------------


def parts(relative: str | PurePosixPath) -> list[str]:
    """The components of a name below a walk's root ('' and '.' are the root itself)."""
    text = str(relative)
    if "\0" in text:
        raise UserFsError(text.replace("\0", "\\0"), "a path cannot contain a NUL character")
    if text.startswith("/"):
        raise UserFsError(text, "an absolute path is not allowed here")
    names = [name for name in text.split("/") if name not in {"", "."}]
    if ".." in names:
        raise UserFsError(text, "'..' is not allowed in a path")
    return names


def _joined(names: list[str]) -> str:
    return "/".join(names) or "."


# -- directories ---------------------------------------------------------------------------------


@contextmanager
def opened_root(path: str | os.PathLike[str]) -> Iterator[int]:
    """A directory the portal owns, with every directory above it (an admin's path: its own
    links, if any, are resolved first); everything below it is reached through `directory()`."""
    fd = os.open(os.path.realpath(path), DIR_FLAGS)
    try:
        yield fd
    finally:
        os.close(fd)


def open_dir(root_fd: int, relative: str | PurePosixPath, *, create: bool = False, mode: int = 0o755) -> int:
    """A new descriptor of the directory `relative` below root_fd (created, parents included, when
    `create`); the caller closes it."""
    names = parts(relative)
    fd = os.dup(root_fd)
    try:
        for depth, name in enumerate(names):
            child = _open_child_dir(fd, name, names[: depth + 1], create=create, mode=mode)
            os.close(fd)
            fd = child
    except BaseException:
        os.close(fd)
        raise
    return fd


@contextmanager
def directory(root_fd: int, relative: str | PurePosixPath, *, create: bool = False, mode: int = 0o755) -> Iterator[int]:
    fd = open_dir(root_fd, relative, create=create, mode=mode)
    try:
        yield fd
    finally:
        os.close(fd)


@contextmanager
def parent_of(root_fd: int, relative: str | PurePosixPath, *, create: bool = False) -> Iterator[tuple[int, str]]:
    """The directory holding the last component, and that component's name."""
    names = parts(relative)
    if not names:
        raise UserFsError(".", "a name below the folder is required")
    with directory(root_fd, "/".join(names[:-1]), create=create) as fd:
        yield fd, names[-1]


def _open_child_dir(parent_fd: int, name: str, shown: list[str], *, create: bool, mode: int) -> int:
    if create:
        try:
            os.mkdir(name, mode, dir_fd=parent_fd)  # never follows: a link there is EEXIST
        except FileExistsError:
            pass
        except FileNotFoundError:
            raise NotFound(_joined(shown)) from None
    try:
        return os.open(name, DIR_FLAGS, dir_fd=parent_fd)
    except FileNotFoundError:
        raise NotFound(_joined(shown)) from None
    except NotADirectoryError:  # O_DIRECTORY | O_NOFOLLOW on a link says ENOTDIR too: which one?
        raise _not_a_folder(parent_fd, name, _joined(shown)) from None


def _not_a_folder(parent_fd: int, name: str, shown: str) -> UserFsError:
    try:
        info = os.stat(name, dir_fd=parent_fd, follow_symlinks=False)
    except OSError:
        return NotFound(shown)
    return LinkRefused(shown) if stat.S_ISLNK(info.st_mode) else NotAFolder(shown)


def lstat(root_fd: int, relative: str | PurePosixPath) -> os.stat_result | None:
    """The entry itself (a link is not followed), None when it (or a folder above it) is missing."""
    names = parts(relative)
    if not names:
        return os.fstat(root_fd)
    try:
        with parent_of(root_fd, relative) as (fd, name):
            return os.stat(name, dir_fd=fd, follow_symlinks=False)
    except (NotFound, FileNotFoundError):
        return None


def list_dir(root_fd: int, relative: str | PurePosixPath = "") -> list[tuple[str, os.stat_result]]:
    """(name, lstat) of each entry of a directory; entries removed meanwhile are left out."""
    entries = []
    with directory(root_fd, relative) as fd, os.scandir(fd) as scan:
        for entry in scan:
            try:
                entries.append((entry.name, entry.stat(follow_symlinks=False)))
            except FileNotFoundError:
                continue
    return entries


# -- files ---------------------------------------------------------------------------------------


def open_file(root_fd: int, relative: str | PurePosixPath) -> io.FileIO:
    """A regular file opened for reading (`.name`: its own name). O_PATH first: a FIFO, socket or
    device is refused on a descriptor that cannot block or touch the device; the file is then
    reopened for reading through that very descriptor (same inode, nothing looked up again)."""
    with parent_of(root_fd, relative) as (parent, name):
        return open_file_at(parent, name, shown=str(relative))


def open_file_at(parent_fd: int, name: str, *, shown: str = "") -> io.FileIO:
    shown = shown or name
    try:
        handle = os.open(name, os.O_PATH | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=parent_fd)
    except FileNotFoundError:
        raise NotFound(shown) from None
    try:
        info = os.fstat(handle)
        if stat.S_ISLNK(info.st_mode):
            raise LinkRefused(shown)
        if not stat.S_ISREG(info.st_mode):
            raise NotAFile(shown, info)
        fd = os.open(f"/proc/self/fd/{handle}", os.O_RDONLY | os.O_CLOEXEC)
    finally:
        os.close(handle)
    file = io.FileIO(fd, "rb")
    file.name = name  # (FileIO's name is writable; a download names itself by it)
    return file


def read_bytes(root_fd: int, relative: str | PurePosixPath, *, limit: int) -> bytes:
    """At most `limit` bytes of a regular file."""
    with open_file(root_fd, relative) as file:
        return file.read(limit)


def write_file(root_fd: int, relative: str | PurePosixPath, chunks: Iterable[bytes]) -> None:
    """Write a file whole or not at all (parent folders created): into a fresh name made with
    O_EXCL in the folder already held, then renamed over the name inside that same folder (a link
    or anything else at the name is replaced, never followed). An exception from `chunks` (a size
    limit) leaves nothing behind."""
    with parent_of(root_fd, relative, create=True) as (parent, name):
        write_file_at(parent, name, chunks, shown=str(relative))


def write_file_at(
    parent_fd: int, name: str, chunks: Iterable[bytes], *, mode: int | None = None, shown: str = ""
) -> None:
    """`write_file` in a directory already held; `mode`: exactly these bits (else 0o644 less the umask)."""
    partial = f".{name}.{secrets.token_hex(6)}{PARTIAL_SUFFIX}"
    fd = os.open(partial, NEW_FILE_FLAGS, 0o644, dir_fd=parent_fd)
    try:
        with open(fd, "wb", closefd=True) as out:
            if mode is not None:
                os.fchmod(fd, mode)
            for chunk in chunks:
                out.write(chunk)
        try:
            os.rename(partial, name, src_dir_fd=parent_fd, dst_dir_fd=parent_fd)
        except IsADirectoryError:
            raise UserFsError(shown or name, "is a directory") from None
    finally:
        with suppress(FileNotFoundError):
            os.unlink(partial, dir_fd=parent_fd)


# -- trees ---------------------------------------------------------------------------------------


def remove(root_fd: int, relative: str | PurePosixPath) -> None:
    """Remove a file, a link (the link itself) or a whole directory tree; nothing is followed."""
    with parent_of(root_fd, relative) as (parent, name):
        remove_at(parent, name, shown=str(relative))


def remove_at(parent_fd: int, name: str, *, shown: str = "") -> None:
    try:
        info = os.stat(name, dir_fd=parent_fd, follow_symlinks=False)
    except FileNotFoundError:
        raise NotFound(shown or name) from None
    if not stat.S_ISDIR(info.st_mode):
        os.unlink(name, dir_fd=parent_fd)
        return
    try:
        fd = os.open(name, DIR_FLAGS, dir_fd=parent_fd)
    except NotADirectoryError:  # swapped for a file or a link meanwhile: that goes instead
        os.unlink(name, dir_fd=parent_fd)
        return
    try:
        for child, _info in list_dir(fd):
            remove_at(fd, child)
    finally:
        os.close(fd)
    os.rmdir(name, dir_fd=parent_fd)


def _by_name(entry: tuple[str, os.stat_result]) -> str:
    return entry[0]


def walk(dir_fd: int, prefix: str = "") -> Iterator[tuple[str, int, str, os.stat_result]]:
    """(relative name, its folder's descriptor, name, lstat) of everything below a directory,
    top down; a subfolder swapped for a link or a file mid-walk is reported as found (lstat), not
    entered."""
    for name, info in sorted(list_dir(dir_fd), key=_by_name):
        relative = f"{prefix}{name}"
        yield relative, dir_fd, name, info
        if stat.S_ISDIR(info.st_mode):
            try:
                child = os.open(name, DIR_FLAGS, dir_fd=dir_fd)
            except (FileNotFoundError, NotADirectoryError):
                continue
            try:
                yield from walk(child, f"{relative}/")
            finally:
                os.close(child)


def copy_tree(source_fd: int, destination_fd: int, *, limit: int | None = None, prefix: str = "") -> int:
    """Copy what a directory holds into another (empty) one: files by content (permission bits
    without set-id, times kept), links as links (they resolve where the copy is used), folders
    walked by descriptor; FIFOs, sockets and devices are left out. Returns the bytes read; over
    `limit` raises TooLarge naming the file where it went over."""
    total = 0
    for name, info in sorted(list_dir(source_fd), key=_by_name):
        shown = f"{prefix}{name}"
        if stat.S_ISLNK(info.st_mode):
            os.symlink(os.readlink(name, dir_fd=source_fd), name, dir_fd=destination_fd)
        elif stat.S_ISDIR(info.st_mode):
            os.mkdir(name, 0o700, dir_fd=destination_fd)
            with _child_dir(source_fd, name, shown) as source, _child_dir(destination_fd, name, shown) as copy:
                left = None if limit is None else limit - total
                total += copy_tree(source, copy, limit=left, prefix=f"{shown}/")
                _keep_mode_and_times(copy, info)
        elif stat.S_ISREG(info.st_mode):
            total += _copy_file(source_fd, name, destination_fd, shown, None if limit is None else limit - total)
    return total


@contextmanager
def _child_dir(parent_fd: int, name: str, shown: str) -> Iterator[int]:
    try:
        fd = os.open(name, DIR_FLAGS, dir_fd=parent_fd)
    except FileNotFoundError:
        raise NotFound(shown) from None
    except NotADirectoryError:
        raise _not_a_folder(parent_fd, name, shown) from None
    try:
        yield fd
    finally:
        os.close(fd)


def _copy_file(source_fd: int, name: str, destination_fd: int, shown: str, limit: int | None) -> int:
    copied = 0
    with open_file_at(source_fd, name, shown=shown) as source:
        info = os.fstat(source.fileno())
        fd = os.open(name, NEW_FILE_FLAGS, 0o600, dir_fd=destination_fd)
        with open(fd, "wb", closefd=True) as out:
            while chunk := source.read(CHUNK):
                copied += len(chunk)
                if limit is not None and copied > limit:
                    raise TooLarge(shown)
                out.write(chunk)
            out.flush()
            _keep_mode_and_times(fd, info)
    return copied


def _keep_mode_and_times(fd: int, info: os.stat_result) -> None:
    os.fchmod(fd, stat.S_IMODE(info.st_mode) & 0o777)
    os.utime(fd, ns=(info.st_atime_ns, info.st_mtime_ns))


def chown_tree(dir_fd: int, uid: int, gid: int) -> None:
    """Give a directory and everything below it to uid:gid (links themselves, never their targets);
    entries a running task removes meanwhile are skipped."""
    _chown_if_needed(dir_fd, None, uid, gid)
    for _relative, parent, name, info in walk(dir_fd):
        if (info.st_uid, info.st_gid) != (uid, gid):
            _chown_if_needed(parent, name, uid, gid)


def _chown_if_needed(fd: int, name: str | None, uid: int, gid: int) -> None:
    try:
        if name is None:
            info = os.fstat(fd)
            if (info.st_uid, info.st_gid) != (uid, gid):
                os.fchown(fd, uid, gid)
        else:
            os.chown(name, uid, gid, dir_fd=fd, follow_symlinks=False)
    except FileNotFoundError:
        pass


@contextmanager
def opened_below_parent(path: str | os.PathLike[str]) -> Iterator[int | None]:
    """A directory whose parent the portal owns (a task's work dir, a user's area): the parent by
    path, the directory itself without following a link. None when it is missing, a link or a file."""
    location = os.path.abspath(path)
    try:
        with opened_root(os.path.dirname(location)) as parent:
            fd = os.open(os.path.basename(location), DIR_FLAGS, dir_fd=parent)
    except (FileNotFoundError, NotADirectoryError):
        yield None
        return
    try:
        yield fd
    finally:
        os.close(fd)
