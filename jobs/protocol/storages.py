"""Which admin-declared storages a job asks for: OpenPAI's `teamwise_storage` runtime plugin
(`parameters.storageConfigNames`) or `extras.storages` (`[{name, mountPath}]`), which wins when
both are there, as in OpenPAI's rest-server (`models/v2/job/k8s.js`). Pure: whether a storage
exists and whether the user may use it is checked by jobs.storage.configs at submit.
"""

from __future__ import annotations

from dataclasses import dataclass
from posixpath import normpath
from typing import Any

from catalogue import Message
from jobs.protocol.errors import FieldError
from jobs.protocol.hooks import RUNTIME_PLUGINS, runtime_plugins
from jobs.protocol.spec import NormalizedSpec

TEAMWISE_STORAGE_PLUGIN = "teamwise_storage"


@dataclass(frozen=True)
class StorageRequest:
    name: str
    field: str  # where the config names it, for errors
    mount_path: str = ""  # '' = the storage's own mount path


@dataclass(frozen=True)
class StorageRequests:
    """`defaults` when the job asks for storage without naming any: the user's default storages."""

    named: list[StorageRequest]
    defaults: bool = False
    errors: tuple[FieldError, ...] = ()

    def errors_said(self) -> list[tuple[str, str]]:
        """The errors as (field, English) pairs (hashable: a key of what a submit already asked)."""
        return [(field, message.text) for field, message in self.errors]


def storage_requests(spec: NormalizedSpec) -> StorageRequests:
    extras = spec.get("extras") or {}
    if "storages" in extras and extras["storages"] is not None:
        return _from_extras(extras["storages"])
    for i, plugin in enumerate(runtime_plugins(spec)):
        if plugin.get("plugin") == TEAMWISE_STORAGE_PLUGIN:
            return _from_plugin(plugin.get("parameters") or {}, f"extras.{RUNTIME_PLUGINS}[{i}].parameters")
    return StorageRequests(named=[])


def _from_plugin(parameters: Any, here: str) -> StorageRequests:
    names = parameters.get("storageConfigNames") if isinstance(parameters, dict) else None
    if names is None or names == []:
        return StorageRequests(named=[], defaults=True)
    if not isinstance(names, list):
        return StorageRequests(named=[], errors=((f"{here}.storageConfigNames", Message.of("config.storage_names")),))
    requests, errors = [], []
    for j, name in enumerate(names):
        field = f"{here}.storageConfigNames[{j}]"
        if isinstance(name, str) and name.strip():
            requests.append(StorageRequest(name=name.strip(), field=field))
        else:
            errors.append((field, Message.of("config.storage_name")))
    return _checked(requests, errors)


def _from_extras(storages: Any) -> StorageRequests:
    if not isinstance(storages, list):
        return StorageRequests(named=[], errors=(("extras.storages", Message.of("config.storage_list")),))
    if not storages:
        return StorageRequests(named=[], defaults=True)
    requests, errors = [], []
    for j, item in enumerate(storages):
        field = f"extras.storages[{j}]"
        name = item.get("name") if isinstance(item, dict) else None
        if not isinstance(name, str) or not name.strip():
            errors.append((f"{field}.name", Message.of("config.storage_name")))
            continue
        mount_path = str(item.get("mountPath") or "")
        if mount_path and (not mount_path.startswith("/") or normpath(mount_path) in {"/", "//"}):
            errors.append((f"{field}.mountPath", Message.of("config.mount_path")))
            continue
        requests.append(StorageRequest(name=name.strip(), field=f"{field}.name", mount_path=mount_path))
    return _checked(requests, errors)


def _checked(requests: list[StorageRequest], errors: list[FieldError]) -> StorageRequests:
    seen: set[str] = set()
    for request in requests:
        if request.name in seen:
            errors.append((request.field, Message.of("config.storage_twice", name=request.name)))
        seen.add(request.name)
    return StorageRequests(named=requests, errors=tuple(errors))
