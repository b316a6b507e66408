"""Groups as OpenPAI has them: a group grants VCs and storages (VirtualCluster.allowed_groups,
StorageConfig.allowed_groups) and, with `admin`, makes admins. A directory (LDAP or OpenID
Connect) hands its group names at each sign-in; set_directory_groups mirrors them, keeping the
groups an admin gave by hand."""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any, TypedDict, Unpack

from django.conf import settings
from django.contrib.auth.models import Group
from django.db import transaction
from django.utils import timezone

from accounts.models import Account, AuditEntry, GroupInfo
from catalogue import Message

# OpenPAI's rule for a group's name (rest-server config/v2/group.js).
GROUP_NAME = re.compile(r"^[A-Za-z0-9_]+\Z")
ADMIN_GROUP = "admingroup"  # OpenPAI's built-in admin group


def account_of(user: Any) -> Account:
    account, _ = Account.objects.get_or_create(
        user=user, defaults={"admin_by_hand": bool(user.is_staff or user.is_superuser)}
    )
    return account


def info_of(group: Group) -> GroupInfo:
    info, _ = GroupInfo.objects.get_or_create(group=group)
    return info


def admin_group() -> Group:
    """OpenPAI's `admingroup`: its members are admins. The directory's group of that role is named
    by PAI_DIRECTORY_ADMIN_GROUP (none by default: no directory group makes admins unasked)."""
    group, _ = Group.objects.get_or_create(name=ADMIN_GROUP)
    info = info_of(group)
    if not info.admin:
        info.admin = True
        info.save(update_fields=["admin"])
    return group


def _directory_group(external: str, source: str) -> Group | None:
    """The portal group a directory's group name stands for: the one with that externalName; the
    admin group for PAI_DIRECTORY_ADMIN_GROUP; else the group of that name (an admin group, or one
    another directory name owns, is never taken this way: None); else a new one granting nothing."""
    info = GroupInfo.objects.select_related("group").filter(external_name=external).first()
    if info is not None:
        return info.group
    if settings.PAI_DIRECTORY_ADMIN_GROUP and external == settings.PAI_DIRECTORY_ADMIN_GROUP:
        group = admin_group()
    else:
        group, created = Group.objects.get_or_create(name=group_name_for(external))
        if created:
            GroupInfo.objects.create(group=group, source=source)
            record(None, "group.create", group.name, source=source, externalName=external)
    info = info_of(group)
    if info.external_name or (info.admin and external != settings.PAI_DIRECTORY_ADMIN_GROUP):
        record(None, "group.skip", group.name, source=source, externalName=external)
        return None
    info.external_name = external
    info.save(update_fields=["external_name"])
    return group


def group_name_for(external: str) -> str:
    """A directory's group name as an OpenPAI group name (letters, digits and '_')."""
    return re.sub(r"[^A-Za-z0-9_]", "_", external)[:150] or "_"


def apply_admin(user: Any) -> bool:
    """is_staff/is_superuser = admin by hand or a member of an admin group; True when it changed."""
    admin = account_of(user).admin_by_hand or user.groups.filter(info__admin=True).exists()
    if bool(user.is_staff) == admin and bool(user.is_superuser) == admin:
        return False
    user.is_staff = user.is_superuser = admin
    user.save(update_fields=["is_staff", "is_superuser"])
    return True


def forget_groups(user: Any) -> None:
    user.__dict__.pop("_pai_group_ids", None)


def record(actor: Any, action: str, target: str, **detail: Any) -> AuditEntry:
    """One line of the audit list; `actor` None means the portal itself (a sign-in's sync)."""
    name = actor.get_username() if actor is not None else "(portal)"
    return AuditEntry.objects.create(
        actor=actor if actor is not None and actor.pk else None,
        actor_name=name,
        action=action,
        target=target,
        detail=detail,
    )


@transaction.atomic
def set_directory_groups(user: Any, external_names: Iterable[str], source: str) -> list[str]:
    """Mirror the directory's groups at sign-in: the user's directory groups (those with an
    externalName) become exactly these (see _directory_group). Groups without an externalName are
    given by hand and stay. Admin rights follow. Returns the user's group names."""
    wanted: dict[int, Group] = {}
    for external in dict.fromkeys(name.strip() for name in external_names if name and name.strip()):
        group = _directory_group(external, source)
        if group is not None:
            wanted[group.pk] = group
    current = {group.pk: group for group in user.groups.select_related("info")}
    by_hand = [group for group in current.values() if not getattr(info_or_none(group), "external_name", "")]
    account = account_of(user)
    account.source, account.synced_at = source, timezone.now()
    account.save(update_fields=["source", "synced_at"])
    _change_groups(None, user, [*by_hand, *wanted.values()], "user.groups.sync", source=source)
    return sorted(group.name for group in user.groups.all())


def info_or_none(group: Group) -> GroupInfo | None:
    try:
        return group.info
    except GroupInfo.DoesNotExist:
        return None


class GroupProblem(Exception):
    """A refused group change: `field` names what to fix, `code` is OpenPAI's error code; str() in English."""

    def __init__(self, field: str, message: Message, code: str = "InvalidParametersError", status: int = 400):
        super().__init__(f"{field}: {message.text}" if field else message.text)
        self.field, self.message, self.code, self.status = field, message, code, status


def find_group(name: str) -> Group:
    group = Group.objects.filter(name=name).select_related("info").first()
    if group is None:
        raise GroupProblem("", Message.of("group.not_found", group=name), "NoGroupError", 404)
    return group


def rows_named(
    model: Any, names: Iterable[str], field: str, code: str, missing_ones: str = "group.no_such_names"
) -> list[Any]:
    """The rows of `model` with these names (groups, VCs, storages); a 404 naming the missing ones."""
    names = list(dict.fromkeys(names))
    rows = list(model.objects.filter(name__in=names))
    missing = sorted(set(names) - {row.name for row in rows})
    if missing:
        raise GroupProblem(field, Message.of(missing_ones, names=missing), code, 404)
    return rows


def groups_named(names: Iterable[str], field: str) -> list[Group]:
    return rows_named(Group, names, field, "NoGroupError", "group.no_such_groups")


def check_group_name(name: str, field: str = "groupname") -> str:
    if not GROUP_NAME.match(name or "") or len(name) > 150:
        raise GroupProblem(field, Message.of("group.bad_name"))
    return name


class About(TypedDict, total=False):
    """What a new group says of itself (its GroupInfo); left out: no description, no directory
    name, no admin rights."""

    description: str
    external_name: str
    admin: bool


@transaction.atomic
def create_group(actor: Any, name: str, **about: Unpack[About]) -> Group:
    check_group_name(name)
    if Group.objects.filter(name=name).exists():
        raise GroupProblem("groupname", Message.of("group.exists", group=name), "ConflictGroupError", 409)
    group = Group.objects.create(name=name)
    info = GroupInfo.objects.create(group=group, **about)
    record(actor, "group.create", name, description=info.description, externalName=info.external_name, admin=info.admin)
    return group


@transaction.atomic
def update_group(
    actor: Any,
    group: Group,
    *,
    description: str | None = None,
    external_name: str | None = None,
    admin: bool | None = None,
) -> None:
    info = info_of(group)
    changes: dict[str, Any] = {}
    for field, key, value in (
        ("description", "description", description),
        ("external_name", "externalName", external_name),
        ("admin", "admin", admin),
    ):
        if value is not None and getattr(info, field) != value:
            setattr(info, field, value)
            changes[key] = value
    if not changes:
        return
    info.save()
    record(actor, "group.update", group.name, **changes)
    if "admin" in changes:
        for member in group.user_set.all():
            apply_admin(member)


@transaction.atomic
def delete_group(actor: Any, group: Group) -> None:
    members = list(group.user_set.all())
    name = group.name
    group.delete()
    record(actor, "group.delete", name, members=sorted(m.get_username() for m in members))
    for member in members:
        forget_groups(member)
        apply_admin(member)


@transaction.atomic
def set_user_groups(actor: Any, user: Any, groups: Iterable[Group]) -> None:
    """An admin's choice of the user's groups (a directory user's directory groups come back at
    their next sign-in: the directory decides those)."""
    _change_groups(actor, user, groups, "user.groups")


def _change_groups(actor: Any, user: Any, groups: Iterable[Group], action: str, **detail: Any) -> None:
    """The user's groups become exactly these; admin rights follow; a change is recorded (an
    admin's choice, or a sign-in's sync when `actor` is None). Admin rights are rechecked even
    without a change: an admin group's flag may have changed since."""
    wanted = {group.pk: group for group in groups}
    current = {group.pk: group for group in user.groups.all()}
    added = [group for pk, group in wanted.items() if pk not in current]
    removed = [group for pk, group in current.items() if pk not in wanted]
    if removed:
        user.groups.remove(*removed)
    if added:
        user.groups.add(*added)
    forget_groups(user)
    apply_admin(user)
    if added or removed:
        names = {"added": sorted(g.name for g in added), "removed": sorted(g.name for g in removed)}
        record(actor, action, user.get_username(), **detail, **names)
