"""The VC pages' form: the Django admin's (clusters.vc_admin, every rule checked there), with a
page's widgets: groups ticked, users named in a line (as `createvc --users a,b` names them), and
its fields in sections."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from django import forms
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy

from clusters.vc_admin import VC_LABELS, VirtualClusterForm

# (heading, fields) in the order the page shows them.
SECTIONS = (
    (gettext_lazy("Quota"), ("name", "description", "share_percent", "slurm_partition")),
    (gettext_lazy("Queue"), ("queue_policy", "backfill", "user_gpu_limit")),
    (gettext_lazy("Time limits"), ("default_run_minutes", "max_run_minutes")),
    (gettext_lazy("Priority classes"), ("default_priority_class", "max_priority_class", "crit_users")),
    (gettext_lazy("Lending and borrowing"), ("lends_idle_quota", "lending_limit_percent", "borrowing_limit_percent")),
    (gettext_lazy("Who may use it"), ("allowed_users", "allowed_groups")),
)


class UserNamesField(forms.Field):
    """Users by name, separated by commas; an unknown name is refused, naming it."""

    widget = forms.TextInput

    def prepare_value(self, value: Any) -> Any:
        if isinstance(value, str) or value is None:
            return value or ""
        return ", ".join(user.get_username() for user in value)

    def to_python(self, value: Any) -> list[Any]:
        names = list(dict.fromkeys(name.strip() for name in (value or "").split(",") if name.strip()))
        found = list(get_user_model().objects.filter(username__in=names))
        missing = sorted(set(names) - {user.get_username() for user in found})
        if missing:
            raise forms.ValidationError(_("unknown users: %(names)s") % {"names": ", ".join(missing)})
        return found

    def has_changed(self, initial: Any, data: Any) -> bool:
        try:
            wanted = {user.pk for user in self.to_python(data)}
        except forms.ValidationError:
            return True
        return wanted != {user.pk for user in initial or []}


class VcPageForm(VirtualClusterForm):
    allowed_users = UserNamesField(
        required=False,
        label=VC_LABELS["allowed_users"],
        help_text=gettext_lazy("User names separated by commas. No users and no groups: everyone may use it."),
    )
    crit_users = UserNamesField(
        required=False,
        label=VC_LABELS["crit_users"],
        help_text=gettext_lazy("User names separated by commas: who besides admins may submit crit jobs here."),
    )
    allowed_groups = forms.ModelMultipleChoiceField(
        Group.objects.order_by("name"),
        required=False,
        widget=forms.CheckboxSelectMultiple,
        label=VC_LABELS["allowed_groups"],
        help_text=gettext_lazy("Their members may use it too."),
    )

    def sections(self) -> list[tuple[str, list[forms.BoundField]]]:
        """The fields by section, without those the page does not offer (a VC's name once made)."""
        shown = [(title, [self[name] for name in names if name in self.fields]) for title, names in SECTIONS]
        return [(str(title), fields) for title, fields in shown if fields]


def edit_form(data: Any, vc: Any) -> VcPageForm:
    """A VC's form on its edit page, without its name: jobs' configs and the usage history name it."""
    form = VcPageForm(data, instance=vc)
    del form.fields["name"]
    return form


def share_room(others: Decimal) -> dict[str, str]:
    """The other VCs' shares in all and what is left of 100 %, as the page says them."""
    left = max(Decimal(0), Decimal(100) - others)
    return {"others": f"{others.normalize():f}", "left": f"{left.normalize():f}"}
