"""An admin's changes to virtual clusters, from the portal's VC pages (`web/vcs/`) and the Django
admin alike: the one form that checks a VC's rules before anything is saved (its shares and the
others' at most 100 % in all, the total `createvc` warns of: clusters.shares; a default time limit
within the longest; a Slurm VC never lends; its partition asked of Slurm), saving it, and removing
a VC while no job names it. Each change is recorded in the audit list."""

from __future__ import annotations

from typing import Any

from django import forms
from django.db import transaction
from django.db.models import ProtectedError
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy, ngettext

from accounts.groups import record
from clusters.models import VirtualCluster
from clusters.shares import total_share
from clusters.slurm_nodes import PartitionError, check_partition

# The VC of the jobs that name none (jobs.protocol's DEFAULT_VIRTUAL_CLUSTER; clusters 0002 makes it).
DEFAULT_VC = "default"

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
        for name in ("default_priority_class", "max_priority_class"):  # (left out: the model's default)
            self.fields[name].required = False

    def clean_default_priority_class(self) -> str:
        return str(self.cleaned_data.get("default_priority_class") or "test")

    def clean_max_priority_class(self) -> str:
        return str(self.cleaned_data.get("max_priority_class") or "crit")

    def clean(self) -> dict:
        cleaned = super().clean() or {}
        default, maximum = cleaned.get("default_run_minutes"), cleaned.get("max_run_minutes")
        if default and maximum and default > maximum:
            self.add_error("default_run_minutes", _("must not be longer than the maximum time limit"))
        self._check_total_share(cleaned)
        return cleaned

    def _check_total_share(self, cleaned: dict) -> None:
        """Shares over 100 % in all are refused as `createvc` warns of them (clusters.shares), unless
        the change lowers the total (a cluster already over can still be put right step by step)."""
        share = cleaned.get("share_percent")
        if share is None:
            return
        name = self.instance.name if self.instance.pk else cleaned.get("name")
        total = total_share(name, 0 if cleaned.get("slurm_partition") else share)
        if total > 100 and total > total_share():
            self.add_error(
                "share_percent",
                _(
                    "With this share the VCs' shares would add up to %(total)s%% (more than 100%%): lower "
                    "another VC's share first (the default VC's, say)."
                )
                % {"total": f"{total.normalize():f}"},
            )

    def clean_lends_idle_quota(self) -> bool:
        if self.cleaned_data.get("lends_idle_quota") and (self.cleaned_data.get("slurm_partition") or "").strip():
            raise forms.ValidationError(_("a Slurm VC never lends: Slurm places its jobs"))
        return bool(self.cleaned_data.get("lends_idle_quota"))

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
    """Why a VC cannot be removed, in the reader's language."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


def removal_problem(vc: VirtualCluster) -> str:
    """Why the VC cannot be removed ("" when it can), said on its page before anyone asks. A job
    keeps its VC for good (Job.virtual_cluster is PROTECT: its page, usage and history name it),
    so a VC that has had jobs, running, waiting or ended, stays; so does `default`, where the
    jobs that name no VC go."""
    if vc.name == DEFAULT_VC:
        return _("The default VC takes the jobs that name no VC: it cannot be removed.")
    count = vc.jobs.count()
    if not count:
        return ""
    return ngettext(
        "%(count)s job names VC %(vc)s, and a job keeps its VC for good (its page and usage name it): "
        "the VC cannot be removed. To retire it, set its share to 0 (its quota goes to the other VCs) "
        "and take away its users and groups.",
        "%(count)s jobs name VC %(vc)s, and a job keeps its VC for good (their pages and usage name it): "
        "the VC cannot be removed. To retire it, set its share to 0 (its quota goes to the other VCs) "
        "and take away its users and groups.",
        count,
    ) % {"count": count, "vc": vc.name}


def remove_vc(actor: Any, vc: VirtualCluster) -> None:
    """Remove a VC that no job names (removal_problem), or say why not."""
    if problem := removal_problem(vc):
        raise VcProblem(problem)
    name = vc.name
    try:
        with transaction.atomic():
            vc.delete()
            record(actor, "vc.delete", name)
    except ProtectedError as error:  # a job submitted to it since
        raise VcProblem(removal_problem(vc)) from error
