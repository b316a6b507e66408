"""An admin's changes to users (the People pages and the API): email, admin by hand, disabled,
groups and the VCs granted to the user alone; and OpenPAI's batch register from CSV. Each change
is recorded in the audit list."""

from __future__ import annotations

import csv
import io
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.contrib.auth.password_validation import validate_password
from django.core.exceptions import ValidationError
from django.core.validators import validate_email
from django.db import transaction
from django.utils.translation import gettext as _
from django.utils.translation import ngettext

from accounts.groups import account_of, apply_admin, forget_groups, record, set_user_groups
from accounts.models import Token
from clusters.models import VirtualCluster

# OpenPAI webportal's batch register columns (src/webportal/src/app/user/fabric/batchRegister),
# plus `groups` (names separated by commas, as `virtual cluster` is).
CSV_COLUMNS = ("username", "password", "email", "admin", "virtual cluster", "groups")
CSV_TEMPLATE = (
    "username,password,email,admin,virtual cluster,groups\n"
    "student1,Change-me-2026,student1@example.org,false,default,\n"
)
# Each user's password is hashed as they are made (a fraction of a second each): a bigger file would
# hold the page for minutes. OpenPAI's page sent one request per user.
MOST_ROWS = 200
TRUE_WORDS, FALSE_WORDS = {"true", "1", "yes"}, {"false", "0", "no", ""}


def restricted_vcs() -> list[VirtualCluster]:
    """VCs that name users or groups: those a user can be granted one by one (the others are open)."""
    return [vc for vc in VirtualCluster.objects.prefetch_related("allowed_users", "allowed_groups") if _restricted(vc)]


def _restricted(vc: VirtualCluster) -> bool:
    return bool(vc.allowed_users.all()) or bool(vc.allowed_groups.all())


@transaction.atomic
def update_user(
    actor: Any,
    user: Any,
    *,
    email: str,
    admin: bool,
    active: bool,
    groups: Iterable[Group],
    own_vcs: Iterable[VirtualCluster],
) -> None:
    """Save the users page's form. Disabling a user also revokes their tokens and ends nothing
    running (their jobs keep running; an admin stops them from the job list)."""
    if user.pk == actor.pk and not active:
        raise ValidationError({"active": _("you cannot disable yourself")})
    changes: dict[str, Any] = {}
    if user.email != email:
        user.email, changes["email"] = email, email
    if user.is_active != active:
        user.is_active, changes["active"] = active, active
    if changes:
        user.save(update_fields=["email", "is_active"])
    if not active and "active" in changes:
        Token.objects.filter(user=user).delete()
    if changes:
        record(actor, "user.update", user.get_username(), **changes)
    set_user_groups(actor, user, groups)
    set_admin(actor, user, admin)
    set_own_vcs(actor, user, list(own_vcs))


@transaction.atomic
def set_admin(actor: Any, user: Any, admin: bool) -> None:
    """The user's admin flag by hand (an admin group's members are admins whatever it says)."""
    account = account_of(user)
    if account.admin_by_hand != admin:
        account.admin_by_hand = admin
        account.save(update_fields=["admin_by_hand"])
        record(actor, "user.update", user.get_username(), admin=admin)
    apply_admin(user)
    if user.pk == actor.pk and not user.is_staff:  # rolled back: an admin cannot lock themself out
        raise ValidationError({"admin": _("you cannot take your own admin rights")})


def set_own_vcs(actor: Any, user: Any, wanted: Iterable[VirtualCluster]) -> None:
    """The restricted VCs that name this user become exactly these (open VCs stay open to all;
    those the user's groups grant stay granted)."""
    wanted_ids = {vc.pk for vc in wanted}
    added, removed = [], []
    for vc in restricted_vcs():
        named = any(member.pk == user.pk for member in vc.allowed_users.all())
        if vc.pk in wanted_ids and not named:
            vc.allowed_users.add(user)
            added.append(vc.name)
        elif vc.pk not in wanted_ids and named:
            vc.allowed_users.remove(user)
            removed.append(vc.name)
    if added or removed:
        forget_groups(user)
        record(actor, "user.vcs", user.get_username(), added=added, removed=removed)


@dataclass
class CsvImport:
    created: list[str] = field(default_factory=list)
    # (row number as a spreadsheet shows it, column, what is wrong)
    errors: list[tuple[int, str, str]] = field(default_factory=list)


def _names(text: str) -> list[str]:
    return [name.strip() for name in (text or "").split(",") if name.strip()]


def import_users_csv(actor: Any, text: str) -> CsvImport:
    """OpenPAI's batch register: every row is checked first; with any bad row none is created."""
    result = CsvImport()
    reader = csv.DictReader(io.StringIO(text.lstrip("\ufeff")))
    columns = [name.strip().lower() for name in (reader.fieldnames or [])]
    for needed in ("username", "password"):
        if needed not in columns:
            result.errors.append((1, needed, _("missing column")))
    if result.errors:
        return result
    User = get_user_model()
    vcs = {vc.name: vc for vc in VirtualCluster.objects.prefetch_related("allowed_users", "allowed_groups")}
    groups = {group.name: group for group in Group.objects.all()}
    existing = set(User.objects.values_list("username", flat=True))
    seen: set[str] = set()
    rows: list[dict[str, Any]] = []
    for number, raw in enumerate(reader, start=2):
        row = {(key or "").strip().lower(): (value or "").strip() for key, value in raw.items() if key}
        if not any(row.values()):
            continue
        problems = _row_problems(row, vcs, groups, existing | seen, User)
        result.errors.extend((number, column, problem) for column, problem in problems)
        seen.add(row.get("username", ""))
        rows.append(row)
    if not rows and not result.errors:
        result.errors.append((2, "username", _("the file has no users")))
    if len(rows) > MOST_ROWS:
        result.errors.insert(
            0, (MOST_ROWS + 2, "", _("at most %(most)s users per import: split the file") % {"most": MOST_ROWS})
        )
    if result.errors:
        return result
    with transaction.atomic():
        for row in rows:
            user = User.objects.create_user(row["username"], email=row.get("email", ""), password=row["password"])
            admin = row.get("admin", "").lower() in TRUE_WORDS
            account = account_of(user)
            account.admin_by_hand = admin
            account.save(update_fields=["admin_by_hand"])
            for name in _names(row.get("virtual cluster", "")):
                if _restricted(vcs[name]):  # an open VC stays open
                    vcs[name].allowed_users.add(user)
            user.groups.add(*(groups[name] for name in _names(row.get("groups", ""))))
            apply_admin(user)
            record(actor, "user.create", user.get_username(), source="csv", admin=admin)
            result.created.append(user.get_username())
    return result


def _django_messages() -> None:  # never called: makemessages reads it
    # Django 5.2 reworded this message and its zh_Hans catalog still has the old wording only.
    ngettext(
        "This password is too short. It must contain at least %d character.",
        "This password is too short. It must contain at least %d characters.",
        8,
    )


def _row_problems(
    row: dict[str, str], vcs: dict[str, Any], groups: dict[str, Any], taken: set[str], User: Any
) -> list[tuple[str, str]]:
    problems: list[tuple[str, str]] = []
    username = row.get("username", "")
    try:
        User.username_validator(username)
        if not username:
            raise ValidationError("empty")
    except ValidationError:
        problems.append(("username", _("letters, digits and @.+-_ only, not empty")))
    else:
        if username in taken:
            problems.append(("username", _("%(name)s already exists") % {"name": username}))
    try:
        validate_password(row.get("password", ""), User(username=username, email=row.get("email", "")))
    except ValidationError as error:
        problems.append(("password", " ".join(error.messages)))
    if row.get("email"):
        try:
            validate_email(row["email"])
        except ValidationError:
            problems.append(("email", _("not an email address")))
    if row.get("admin", "").lower() not in TRUE_WORDS | FALSE_WORDS:
        problems.append(("admin", _("true or false")))
    unknown_vcs = [name for name in _names(row.get("virtual cluster", "")) if name not in vcs]
    if unknown_vcs:
        problems.append(("virtual cluster", _("no such VC: %(names)s") % {"names": ", ".join(unknown_vcs)}))
    unknown_groups = [name for name in _names(row.get("groups", "")) if name not in groups]
    if unknown_groups:
        problems.append(("groups", _("no such group: %(names)s") % {"names": ", ".join(unknown_groups)}))
    return problems
