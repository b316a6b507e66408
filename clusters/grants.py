"""What a group grants (OpenPAI's group `extension.acls`): VCs and storages name groups
(`allowed_groups`) beside users; the VCs granted to one user alone. Groups themselves, their
members and admin rights are accounts.groups'."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Unpack

from django.contrib.auth.models import Group
from django.db import transaction

from accounts.groups import About, GroupProblem, info_or_none, record, rows_named
from accounts.groups import create_group as create_bare_group
from accounts.groups import delete_group as delete_bare_group
from catalogue import Message
from clusters.models import StorageConfig, VirtualCluster


@transaction.atomic
def create_group(
    actor: Any, name: str, *, vcs: Iterable[str] = (), storages: Iterable[str] = (), **about: Unpack[About]
) -> Group:
    group = create_bare_group(actor, name, **about)
    set_grants(actor, group, list(vcs), list(storages))
    return group


def grants_of(group: Group) -> tuple[list[str], list[str]]:
    """The names of the VCs and storages the group grants."""
    vcs = sorted(vc.name for vc in group.virtual_clusters.all())
    storages = sorted(config.name for config in group.storage_configs.all())
    return vcs, storages


VC_FIELD, STORAGE_FIELD = "extension.acls.virtualClusters", "extension.acls.storageConfigs"


@transaction.atomic
def set_grants(actor: Any, group: Group, vc_names: Iterable[str] | None, storage_names: Iterable[str] | None) -> None:
    """The VCs and storages the group grants become exactly these (None: leave as is). A VC or
    storage that named nobody was open to everyone: naming this group closes it to the others.
    Taking away the last name of one would open it to everyone: refused (grant it elsewhere first)."""
    before = grants_of(group)
    if vc_names is not None:
        vcs = rows_named(VirtualCluster, vc_names, VC_FIELD, "NoVirtualClusterError")
        _refuse_opening(group, [vc for vc in group.virtual_clusters.all() if vc not in vcs], VC_FIELD)
        group.virtual_clusters.set(vcs)
    if storage_names is not None:
        storages = rows_named(StorageConfig, storage_names, STORAGE_FIELD, "NoStorageError")
        _refuse_opening(group, [s for s in group.storage_configs.all() if s not in storages], STORAGE_FIELD)
        group.storage_configs.set(storages)
    after = grants_of(group)
    if after != before:
        record(actor, "group.grants", group.name, virtualClusters=after[0], storageConfigs=after[1])


@transaction.atomic
def delete_group(actor: Any, group: Group) -> None:
    """Delete the group unless a VC or storage names only it (that would open it to everyone)."""
    _refuse_opening(group, list(group.virtual_clusters.all()), VC_FIELD)
    _refuse_opening(group, list(group.storage_configs.all()), STORAGE_FIELD)
    delete_bare_group(actor, group)


def _refuse_opening(group: Group, losing: list[Any], field: str) -> None:
    """A VC or storage that would name no user, group (or, for a storage, VC) once it loses this group."""
    for thing in losing:
        others = thing.allowed_users.exists() or thing.allowed_groups.exclude(pk=group.pk).exists()
        if isinstance(thing, StorageConfig):
            others = others or thing.virtual_clusters.exists()
        if not others:
            raise GroupProblem(field, Message.of("group.opens_to_everyone", name=thing.name, group=group.name))


def group_row(group: Group) -> dict[str, Any]:
    """OpenPAI's group: {groupname, description, externalName, extension: {acls: {...}}}."""
    info = info_or_none(group)
    vcs, storages = grants_of(group)
    return {
        "groupname": group.name,
        "description": info.description if info else "",
        "externalName": info.external_name if info else "",
        "extension": {"acls": {"admin": bool(info and info.admin), "virtualClusters": vcs, "storageConfigs": storages}},
    }
