"""What the storage checks say (jobs.storage, the storage page): a path a config or the page names,
an admin's storage a job asks for. Codes `storage.<what>`; `%(path)s` is the path as the user wrote
it (or as the walk found it)."""

from __future__ import annotations

from catalogue import Message, Text

SYSTEM_SAYS = Text("storage.system_says", "%(path)s: %(why)s")  # what the system said (strerror), as it said it
NESTED_TOO_DEEP = Text("storage.nested_too_deep", "%(path)s: folders nested too deep")
NO_OWNER = Text("storage.no_owner", "'%(name)s' cannot own a storage area")
PATH_REQUIRED = Text("storage.path_required", "a path is required")
NUL = Text("storage.nul", "'%(path)s': a path cannot contain a NUL character")
NO_HDFS = Text(
    "storage.no_hdfs",
    "%(path)s: no HDFS configured on this portal; use $PAI_DEFAULT_FS_URI/... (the portal's file store)",
)
SCHEME = Text("storage.scheme", "%(path)s: unsupported scheme %(scheme)s://; use $PAI_DEFAULT_FS_URI/...")
VARIABLE = Text("storage.variable", "%(path)s: only $PAI_DEFAULT_FS_URI may be used in a path")
DOTDOT = Text("storage.dotdot", "%(path)s: '..' is not allowed in a path")
OUTSIDE = Text("storage.outside", "%(path)s: outside your storage area (%(area)s); use $PAI_DEFAULT_FS_URI/...")
NOT_A_DIRECTORY = Text("storage.not_a_directory", "%(path)s: exists and is not a directory")
NO_DIRECTORY_IN_AREA = Text("storage.no_directory_in_area", "%(path)s: no such directory in your storage area")
NO_FILE_IN_AREA = Text("storage.no_file_in_area", "%(path)s: no such file in your storage area")
NO_DIRECTORY = Text("storage.no_directory", "%(path)s: no such directory")
NOT_FOUND = Text("storage.not_found", "%(path)s: no such file or directory")
NOT_IN_AREA = Text("storage.not_in_area", "%(path)s: not in a storage area")
CODE_TOO_BIG = Text(
    "storage.code_too_big", "codeDir is over the %(mb)s MB limit: keep data in dataDir, code in codeDir"
)
AUTH_FILE_LINES = Text("storage.auth_file_lines", "%(path)s: an authFile has three lines: registry, username, password")
FILE_NAME_REQUIRED = Text("storage.file_name_required", "a file name is required")
OVER_UPLOAD_BYTES = Text("storage.over_upload_bytes", "%(path)s: over the upload limit of %(limit)s bytes")
IS_A_DIRECTORY = Text("storage.is_a_directory", "%(path)s: is a directory")
REMOVE_AREA = Text("storage.remove_area", "refusing to remove your whole storage area")
# The storage page's own refusals.
UPLOAD_TOO_BIG = Text("storage.upload_too_big", "the upload is over the limit of %(limit)s MB")
READ_ONLY = Text("storage.read_only", "storage %(name)s is read-only")
CHOOSE_FILE = Text("storage.choose_file", "choose at least one file to upload")
UNKNOWN_ACTION = Text("storage.unknown_action", "unknown action")

# What the no-follow walk (clusters.userfs) refuses, by its reason.
WALK_REASONS = {
    text.template.removeprefix("%(path)s: "): text
    for text in (
        Text("storage.link_refused", "%(path)s: is a symbolic link; links are not followed"),
        NOT_FOUND,
        Text("storage.not_a_folder", "%(path)s: is a file, not a folder"),
        Text("storage.over_size_limit", "%(path)s: over the size limit"),
        IS_A_DIRECTORY,
        Text("storage.not_a_regular_file", "%(path)s: is not a regular file"),
        Text("storage.walk_nul", "%(path)s: a path cannot contain a NUL character"),
        Text("storage.absolute_path", "%(path)s: an absolute path is not allowed here"),
        DOTDOT,
        Text("storage.name_required", "%(path)s: a name below the folder is required"),
    )
}


def walk_refusal(path: str, reason: str) -> Message:
    """What the walk refused, for `path`: its reason as a message (as it said it, when new)."""
    text = WALK_REASONS.get(reason)
    return text(path=path) if text is not None else SYSTEM_SAYS(path=path, why=reason)


# The storages a job asks for (jobs.storage.configs).
STORAGE_UNKNOWN = Text("storage.unknown", "storage '%(name)s' does not exist (yours: %(yours)s)")
STORAGE_UNKNOWN_NONE = Text("storage.unknown_none", "storage '%(name)s' does not exist (yours: none)")
STORAGE_FORBIDDEN = Text("storage.forbidden", "you may not use storage '%(name)s'")
STORAGE_SAME_MOUNT = Text("storage.same_mount", "mounts at %(path)s, as storage '%(other)s' does")
