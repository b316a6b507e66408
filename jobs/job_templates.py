"""Job templates: configs saved to start jobs from, private, shared with one of the owner's groups
(its members use it, read-only) or for everyone, edited by their owner, with the parameters a user
is asked for (the config's `parameters`, their values the defaults). Saved from a job or a
pasted config, or imported from OpenPAI's marketplace as it stored them: the marketplace-v2 YAML
files (a v2 config with its `description` and `contributor`) and openpaimarketplace's items
(`name`, `author`, `summary`, `description`, `tags`, `jobConfig`)."""

from __future__ import annotations

import re
from typing import Any, Required, TypedDict, Unpack

import yaml
from django.db import IntegrityError, transaction
from django.db.models import Q, QuerySet

from accounts.permissions import group_ids_of, is_admin
from catalogue import Message
from jobs.group_shares import group_to_share_with
from jobs.models import JobTemplate
from jobs.protocol import JobConfigError, export, load, mask_config_text
from jobs.protocol.errors import FieldError
from jobs.protocol.parsing import parse

NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.\- ]{0,99}")


def visible_templates(user: Any) -> QuerySet[JobTemplate]:
    """The user's own, those shared with a group of theirs and everyone's public ones (admins: all)."""
    templates = JobTemplate.objects.select_related("owner", "shared_with_group")
    if is_admin(user):
        return templates
    return templates.filter(
        Q(owner=user) | Q(visibility=JobTemplate.Visibility.PUBLIC) | Q(shared_with_group_id__in=group_ids_of(user))
    )


def find(user: Any, template_id: Any) -> JobTemplate:
    """A template the user may see by its id; raises JobTemplate.DoesNotExist (also for a bad id)."""
    try:
        return visible_templates(user).get(pk=int(template_id))
    except (TypeError, ValueError) as error:
        raise JobTemplate.DoesNotExist(f"no template {template_id!r}") from error


def search(user: Any, text: str) -> QuerySet[JobTemplate]:
    found = visible_templates(user)
    for word in text.split():
        found = found.filter(Q(name__icontains=word) | Q(summary__icontains=word) | Q(description__icontains=word))
    return found


def may_change(user: Any, template: JobTemplate) -> bool:
    return template.owner_id == user.pk or is_admin(user)


class Fields(TypedDict, total=False):
    """What a template's owner writes, save()'s and update()'s: its name and config, and the rest
    (left out: empty, private, shared with no group)."""

    name: Required[str]
    config_text: Required[str]
    summary: str
    description: str
    visibility: str
    shared_with_group: str


def save(user: Any, *, tags: list[str] | None = None, source: str = "", **fields: Unpack[Fields]) -> JobTemplate:
    """A new template of the user's; raises JobConfigError naming the field at fault: name,
    visibility, sharedWithGroup (a group of the user's, by name) or config.<the config's own
    path> (`config.taskRoles.worker...: must be >= 100`)."""
    template = JobTemplate(owner=user, tags=[str(tag) for tag in tags or []], source=source)
    return _store(template, fields)


def update(template: JobTemplate, **fields: Unpack[Fields]) -> JobTemplate:
    """The template changed by its owner (who may_change it is the caller's check), checked as
    save() checks a new one; its group is one of the owner's."""
    return _store(template, fields)


def _store(template: JobTemplate, fields: Fields) -> JobTemplate:
    name, config_text = fields["name"].strip(), fields["config_text"]
    visibility = fields.get("visibility", JobTemplate.Visibility.PRIVATE)
    errors: list[FieldError] = []
    if not NAME.fullmatch(name):
        errors.append(("name", Message.of("template.name")))
    if visibility not in JobTemplate.Visibility.values:
        errors.append(("visibility", Message.of("config.choice", options=", ".join(JobTemplate.Visibility.values))))
    try:
        group = group_to_share_with(template.owner, fields.get("shared_with_group", ""), "sharedWithGroup")
    except JobConfigError as error:
        errors += error.errors
    if errors:
        raise JobConfigError(errors)
    try:
        load(config_text)  # (a config that cannot run is no template)
    except JobConfigError as error:
        raise JobConfigError(
            [(f"config.{path}" if path else "config", message) for path, message in error.errors]
        ) from error
    template.name, template.summary = name, fields.get("summary", "").strip()[:255]
    template.description = fields.get("description", "")
    template.config_text, template.visibility, template.shared_with_group = (
        mask_config_text(config_text),
        visibility,
        group,
    )
    try:
        with transaction.atomic():  # (a name taken rolls back this write alone)
            template.save()
    except IntegrityError as exc:
        raise JobConfigError([("name", Message.of("template.name_taken", name=name))]) from exc
    return template


def asked_parameters(template: JobTemplate) -> dict[str, Any]:
    """The parameters a user is asked for when starting from the template, with their defaults."""
    try:
        doc, _ = parse(template.config_text)
    except JobConfigError:
        return {}
    parameters = doc.get("parameters")
    return dict(parameters) if isinstance(parameters, dict) else {}


def config_with(template: JobTemplate, values: dict[str, str]) -> dict[str, Any]:
    """The template's config with the parameter values a user gave (as YAML types them)."""
    doc, _ = parse(template.config_text)
    asked = asked_parameters(template)
    given = {
        name: yaml.safe_load(value) if value.strip() else asked[name] for name, value in values.items() if name in asked
    }
    if given:
        doc["parameters"] = {**asked, **given}
    return doc


def from_marketplace(item: Any) -> dict[str, Any]:
    """save()'s arguments for an OpenPAI marketplace entry: an openpaimarketplace item (a mapping
    with `jobConfig`) or a marketplace-v2 file's config. Raises JobConfigError."""
    if not isinstance(item, dict):
        raise JobConfigError([("", Message.of("template.marketplace_item"))])
    if "jobConfig" in item:
        config = item["jobConfig"]
        if isinstance(config, str):
            config, _ = parse(config)
        return {
            "name": str(item.get("name") or (config or {}).get("name") or ""),
            "config_text": export(config),
            "summary": str(item.get("summary") or ""),
            "description": str(item.get("description") or ""),
            "tags": [str(tag) for tag in [*(item.get("categories") or []), *(item.get("tags") or [])]],
            "source": "openpaimarketplace",
        }
    description = str(item.get("description") or "")
    return {
        "name": str(item.get("name") or ""),
        "config_text": export(item),
        "summary": description.strip().splitlines()[0][:255] if description.strip() else "",
        "description": description,
        "tags": [str(item["contributor"])] if item.get("contributor") else [],
        "source": "marketplace-v2",
    }
