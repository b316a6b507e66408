"""Admin-declared storages (clusters.models.StorageConfig) in jobs: which ones a user may use and
their defaults, the submit-time check of what a job names (jobs.protocol.storages), and the mounts
a task gets, whichever node it lands on (each node mounts them itself, see the executors).
"""

from __future__ import annotations

import os
import posixpath
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from django.db.models.signals import m2m_changed, post_delete, post_save
from django.dispatch import receiver

from accounts.permissions import is_admin
from catalogue import Message
from clusters import userfs
from clusters.executors.base import Mount, NfsVolume
from clusters.models import StorageConfig, VirtualCluster
from jobs.protocol.errors import FieldError
from jobs.protocol.spec import NormalizedSpec
from jobs.protocol.storages import storage_requests
from jobs.storage.errors import StorageError


class StorageNotFound(LookupError):
    pass


class StorageForbidden(PermissionError):
    pass


@dataclass(frozen=True)
class Chosen:
    config: StorageConfig
    mount_path: str  # where the task sees it


CONFIGS_TTL_S = 2.0
_configs: tuple[float, list[StorageConfig]] | None = None  # (read at, every config with who may use it)


def storage_configs() -> list[StorageConfig]:
    """Every storage config with the users and VCs it is open to, read at most every CONFIGS_TTL_S:
    a submit asks once and a launch up to four times per task (the users' areas, the job's mounts,
    the storage gate), three queries each. An admin's change reaches other processes within that
    time, this one at once (saving or deleting a config, or changing who may use it, forgets it)."""
    global _configs
    now = time.monotonic()
    if _configs is None or now - _configs[0] > CONFIGS_TTL_S:
        configs = StorageConfig.objects.prefetch_related(
            "allowed_users", "allowed_groups", "virtual_clusters__allowed_users", "virtual_clusters__allowed_groups"
        )
        _configs = (now, list(configs))
    return _configs[1]


@receiver([post_save, post_delete], sender=StorageConfig)
@receiver(m2m_changed, sender=StorageConfig.allowed_users.through)
@receiver(m2m_changed, sender=StorageConfig.virtual_clusters.through)
@receiver(m2m_changed, sender=VirtualCluster.allowed_users.through)
@receiver(m2m_changed, sender=StorageConfig.allowed_groups.through)
@receiver(m2m_changed, sender=VirtualCluster.allowed_groups.through)
def forget_storage_configs(**kwargs: Any) -> None:
    global _configs
    _configs = None


def usable_storages(user: Any) -> list[StorageConfig]:
    return [config for config in storage_configs() if config.is_open_to(user)]


def usable_storage(user: Any, name: str) -> StorageConfig:
    """The storage by name; StorageNotFound / StorageForbidden otherwise."""
    config = next((config for config in storage_configs() if config.name == name), None)
    if config is None:
        raise StorageNotFound(f"Storage {name} is not found.")
    if not config.is_open_to(user):
        raise StorageForbidden(f"User {user.get_username()} is not allowed to access {name}.")
    return config


def chosen_storages(user: Any, spec: NormalizedSpec) -> tuple[list[Chosen], list[FieldError]]:
    """The storages the job mounts (named ones, or the user's defaults) and, for those it may not
    have, an error naming the field that names them."""
    requests = storage_requests(spec)
    configs = {config.name: config for config in storage_configs()}
    usable = sorted(name for name, config in configs.items() if config.is_open_to(user))
    if requests.defaults:
        defaults = [config for config in configs.values() if config.is_default and config.is_open_to(user)]
        return [Chosen(config, config.task_path) for config in defaults], []
    chosen: list[Chosen] = []
    errors: list[FieldError] = []
    mounted_at: dict[str, str] = {}
    for request in requests.named:
        config = configs.get(request.name)
        if config is None:
            unknown = (
                Message.of("storage.unknown", name=request.name, yours=", ".join(usable))
                if usable
                else Message.of("storage.unknown_none", name=request.name)
            )
            errors.append((request.field, unknown))
        elif not config.is_open_to(user):
            errors.append((request.field, Message.of("storage.forbidden", name=request.name)))
        else:
            where = request.mount_path or config.task_path
            if where in mounted_at:
                errors.append((request.field, Message.of("storage.same_mount", path=where, other=mounted_at[where])))
            mounted_at[where] = config.name
            chosen.append(Chosen(config, where))
    return chosen, errors


def validate_storage_requests(user: Any, spec: NormalizedSpec) -> list[FieldError]:
    """At submit: a storage that does not exist or that the user may not use is refused."""
    return chosen_storages(user, spec)[1]


def task_mounts(user: Any, spec: NormalizedSpec) -> list[Mount]:
    """At launch; a storage removed or closed to the user since submit raises StorageError."""
    chosen, errors = chosen_storages(user, spec)
    if errors:
        field, message = errors[0]
        raise StorageError(message, field)
    username = user.get_username()
    return [
        storage_mount(
            item.config,
            username if item.config.per_user else "",
            item.mount_path,
            read_only=item.config.read_only,
            shared=not item.config.per_user,
        )
        for item in chosen
    ]


def storage_mount(config: StorageConfig, subpath: str, container_path: str, *, read_only: bool, shared: bool) -> Mount:
    """A folder of the storage (its root when subpath is '') at container_path, mounted by the node."""
    location = posixpath.join(config.path, subpath) if subpath else config.path
    read_only = read_only or config.read_only
    if config.kind == StorageConfig.Kind.NFS:
        return Mount(
            host_path="",
            container_path=container_path,
            read_only=read_only,
            nfs=NfsVolume(server=config.server, export=location, options=config.mount_options),
            storage=config.name,
            shared=shared,
        )
    # A host path's folders below the admin's path may be a user's to write (their area, their
    # per-user folder): the node reaches them from the admin's path without following a link.
    return Mount(location, container_path, read_only=read_only, storage=config.name, shared=shared, beneath=config.path)


def api_summary(config: StorageConfig, default: bool) -> dict[str, Any]:
    """OpenPAI's storage summary (rest-server models/v2/storage.js): {name, share, volumeName, default}."""
    return {"name": config.name, "share": not config.per_user, "volumeName": config.name, "default": default}


def api_detail(config: StorageConfig) -> dict[str, Any]:
    """OpenPAI's storage detail: the summary with type, data, readOnly and mountOptions."""
    data = {"server": config.server, "path": config.path} if config.kind == StorageConfig.Kind.NFS else {}
    if config.kind == StorageConfig.Kind.HOST_PATH:
        data = {"path": config.path}
    return {
        **api_summary(config, config.is_default),
        "type": config.kind,
        "data": data,
        "readOnly": config.read_only,
        "mountOptions": [option for option in config.mount_options.split(",") if option],
        "mountPath": config.task_path,
    }


@dataclass(frozen=True)
class Browsable:
    """A storage as the storage page shows it: where the portal reads it, what a config writes."""

    name: str  # '' = the user's own area
    root: Path | None  # None = the user's own area (jobs.storage confines paths to it)
    config_path: str  # what a job config writes for its top folder
    writable: bool
    shared: bool  # other users' files too: every delete is confirmed


MY_AREA = Browsable(name="", root=None, config_path="$PAI_DEFAULT_FS_URI", writable=True, shared=False)


def browsable_storages(user: Any) -> list[StorageConfig]:
    """Those the user may use and the portal's machine can see, the users' areas' own apart."""
    return [c for c in usable_storages(user) if c.portal_root and not c.holds_user_areas]


def browsable(user: Any, name: str) -> Browsable:
    """The user's area for '', else the storage by name; StorageNotFound / StorageForbidden."""
    if not name:
        return MY_AREA
    config = next((c for c in browsable_storages(user) if c.name == name), None)
    if config is None:
        usable_storage(user, name)  # says which: not found, or forbidden
        raise StorageNotFound(f"Storage {name} cannot be browsed here (the portal's machine does not mount it).")
    root = Path(config.portal_root)
    if config.per_user:
        root = root / user.get_username()
        try:  # the user's folder, made below the storage's root without following a link
            Path(config.portal_root).mkdir(parents=True, exist_ok=True)
            with userfs.opened_root(config.portal_root) as top:
                os.close(userfs.open_dir(top, user.get_username(), create=True, mode=0o777))
        except (userfs.UserFsError, OSError) as exc:
            raise StorageNotFound(f"Storage {name} cannot be browsed: {exc}") from exc
    return Browsable(
        name=config.name,
        root=root,
        config_path=config.task_path,
        writable=not config.read_only or is_admin(user),
        shared=not config.per_user,
    )
