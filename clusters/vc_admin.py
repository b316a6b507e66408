"""An admin's changes to virtual clusters, from the portal's VC pages (`web/vcs/`), the Django
admin and the API (`/api/v2/virtual-clusters`) alike: the one form that checks a VC's rules
(clusters.vc_rules, which `createvc` checks too) before anything is saved, saving it, and removing
a VC while no job names it. Each change is recorded in the audit list."""

from __future__ import annotations

from typing import Any

from django import forms
from django.db import transaction
from django.db.models import ProtectedError
from django.utils.translation import gettext_lazy

from accounts.groups import record
from catalogue import Message
from clusters import vc_rules
from clusters.models import VirtualCluster
from clusters.shares import total_share
from clusters.slurm_nodes import PartitionError, check_partition

# The fields' names in the page's language, for the admin (accounts.admin_labels) and the VC pages.
VC_LABELS = {
    "name": gettext_lazy("Name"),
    "description": gettext_lazy("Description"),
    "share_percent": gettext_lazy("Share (%)"),
    "slurm_partition": gettext_lazy("Slurm partition"),
    "queue_policy": gettext_lazy("Queue policy"),
    "backfill": gettext_lazy("Backfill"),
    "user_gpu_limit": gettext_lazy("GPUs per user"),
    "default_run_minutes": gettext_lazy("Default time limit (minutes)"),
    "max_run_minutes": gettext_lazy("Longest time limit (minutes)"),
    "default_priority_class": gettext_lazy("Default priority class"),
    "max_priority_class": gettext_lazy("Highest priority class"),
    "crit_users": gettext_lazy("Users who may use crit"),
    "lends_idle_quota": gettext_lazy("Lends its idle quota"),
    "lending_limit_percent": gettext_lazy("Lending limit (%)"),
    "borrowing_limit_percent": gettext_lazy("Borrowing limit (%)"),
    "created_at": gettext_lazy("Created at"),
    "allowed_users": gettext_lazy("Allowed users"),
    "allowed_groups": gettext_lazy("Allowed groups"),
}


class VirtualClusterForm(forms.ModelForm):
    class Meta:
        model = VirtualCluster
        fields = (
            "name",
            "description",
            "share_percent",
            "slurm_partition",
            "allowed_users",
            "allowed_groups",
            "queue_policy",
            "backfill",
            "user_gpu_limit",
            "default_run_minutes",
            "max_run_minutes",
            "default_priority_class",
            "max_priority_class",
            "crit_users",
            "lends_idle_quota",
            "lending_limit_percent",
            "borrowing_limit_percent",
        )
        labels = VC_LABELS

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.rule_errors: list[tuple[str, Message]] = []  # (field, why) of clean(): the API answers their codes
        for name in ("default_priority_class", "max_priority_class"):  # (left out: the model's default)
            self.fields[name].required = False

    def clean_default_priority_class(self) -> str:
        return str(self.cleaned_data.get("default_priority_class") or "test")

    def clean_max_priority_class(self) -> str:
        return str(self.cleaned_data.get("max_priority_class") or "crit")

    def clean(self) -> dict:
        cleaned = super().clean() or {}
        partition = cleaned.get("slurm_partition") or ""
        self.rule_errors = []
        problems = {
            "default_run_minutes": vc_rules.time_limit_problem(
                cleaned.get("default_run_minutes"), cleaned.get("max_run_minutes")
            ),
            "lends_idle_quota": vc_rules.lending_problem(bool(cleaned.get("lends_idle_quota")), partition),
        }
        if cleaned.get("share_percent") is not None:
            name = self.instance.name if self.instance.pk else cleaned.get("name")
            problems["share_percent"] = vc_rules.share_problem(name, cleaned["share_percent"], partition)
        for field, problem in problems.items():
            if problem is not None and field not in self.errors:
                self.rule_errors.append((field, problem))
                self.add_error(field, vc_rules.shown(problem))
        return cleaned

    def clean_slurm_partition(self) -> str:
        """Checked against Slurm as `createvc --slurm-partition` does (unchanged values are not asked again)."""
        partition: str = self.cleaned_data["slurm_partition"].strip()
        if partition and partition != self.initial.get("slurm_partition"):
            try:
                check_partition(partition)
            except PartitionError as exc:
                raise forms.ValidationError(str(exc)) from exc
        return partition


def other_shares(vc: VirtualCluster | None) -> Any:
    """What the other share VCs' shares add up to: the room a VC's share has is 100 % less this."""
    return total_share(vc.name, 0) if vc is not None else total_share()


@transaction.atomic
def save_vc(actor: Any, form: VirtualClusterForm) -> VirtualCluster:
    """Save a VC the form has checked (form.is_valid()), and say which fields changed in the audit list."""
    created = form.instance.pk is None
    vc = form.save()
    record(actor, "vc.create" if created else "vc.update", vc.name, fields=sorted(form.changed_data))
    return vc


class VcProblem(Exception):
    """Why a VC cannot be removed: `reason` (its code for the API), `message` in the reader's language."""

    def __init__(self, reason: Message) -> None:
        self.reason, self.message = reason, vc_rules.shown(reason)
        super().__init__(self.message)


def removal_problem(vc: VirtualCluster) -> str:
    """Why the VC cannot be removed in the reader's language ("" when it can), said on its page
    before anyone asks (clusters.vc_rules)."""
    problem = vc_rules.removal_problem(vc)
    return vc_rules.shown(problem) if problem is not None else ""


def remove_vc(actor: Any, vc: VirtualCluster) -> None:
    """Remove a VC that no job names (removal_problem), or say why not."""
    if (problem := vc_rules.removal_problem(vc)) is not None:
        raise VcProblem(problem)
    name = vc.name
    try:
        with transaction.atomic():
            vc.delete()
            record(actor, "vc.delete", name)
    except ProtectedError as error:  # a job submitted to it since
        raise VcProblem(
            vc_rules.removal_problem(vc) or Message.of("vc.remove.jobs_name_it", count=1, vc=name)
        ) from error
