"""Admins make, change and remove VCs through the API: `POST /api/v2/virtual-clusters`,
`PATCH` and `DELETE /api/v2/virtual-clusters/<name>` (OpenPAI has no route that writes a VC in
v2; its reads, in cluster.py, answer as before). The body's keys are the VC form's fields
(clusters.vc_admin, which the VC pages and the Django admin use): the same rules refuse the same
things, naming the field, and the same actions save, remove and record in the audit list. Admins
only, never with an application token (as every admin operation)."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from django import forms
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from drf_spectacular.utils import OpenApiTypes, extend_schema, inline_serializer
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response

from catalogue import Message
from clusters import vc_admin
from clusters.models import VirtualCluster
from web.api.auth import IsAdminNotApplicationToken
from web.api.errors import ApiConfigError, ApiError
from web.api.views import cluster

NAMED = {"allowed_users": "username", "crit_users": "username", "allowed_groups": "name"}


class VcApiForm(vc_admin.VirtualClusterForm):
    """The VC form with users and groups by name, as the API's callers know them."""

    allowed_users = forms.ModelMultipleChoiceField(get_user_model().objects, to_field_name="username", required=False)
    crit_users = forms.ModelMultipleChoiceField(get_user_model().objects, to_field_name="username", required=False)
    allowed_groups = forms.ModelMultipleChoiceField(Group.objects, to_field_name="name", required=False)


FIELDS = VcApiForm.Meta.fields

VC_BODY = inline_serializer(
    "VirtualClusterChange",
    {
        "name": serializers.CharField(help_text="POST only: a VC's name stays once made (jobs and usage name it)"),
        "description": serializers.CharField(required=False),
        "share_percent": serializers.DecimalField(
            max_digits=5, decimal_places=2, help_text="% of the cluster; the VCs' shares add up to 100 % at most"
        ),
        "slurm_partition": serializers.CharField(required=False, help_text="Slurm places its jobs (its quota)"),
        "allowed_users": serializers.ListField(child=serializers.CharField(), required=False),
        "allowed_groups": serializers.ListField(child=serializers.CharField(), required=False),
        "queue_policy": serializers.ChoiceField(VirtualCluster.QueuePolicy.values, required=False),
        "backfill": serializers.BooleanField(required=False),
        "user_gpu_limit": serializers.IntegerField(allow_null=True, required=False),
        "default_run_minutes": serializers.IntegerField(allow_null=True, required=False),
        "max_run_minutes": serializers.IntegerField(allow_null=True, required=False),
        "default_priority_class": serializers.CharField(required=False),
        "max_priority_class": serializers.CharField(required=False),
        "crit_users": serializers.ListField(child=serializers.CharField(), required=False),
        "lends_idle_quota": serializers.BooleanField(required=False, help_text="never for a Slurm VC"),
        "lending_limit_percent": serializers.IntegerField(allow_null=True, required=False),
        "borrowing_limit_percent": serializers.IntegerField(allow_null=True, required=False),
    },
)


class FormErrors:
    """A refused VC form's errors as the API answers them: [{field, message, code, params}], the
    rules' catalogue codes (clusters.vc_rules), or Django's own check's (`form.<code>`)."""

    def __init__(self, form: VcApiForm) -> None:
        rules = dict(form.rule_errors)
        self.errors: list[dict[str, Any]] = []
        for field, errors in form.errors.as_data().items():
            for error in errors:
                said: Message | None = rules.pop(field, None)
                if said is not None:
                    self.errors.append({"field": field, **said.as_dict()})
                else:
                    text = " ".join(error.messages)
                    self.errors.append({"field": field, "message": text, "code": f"form.{error.code}", "params": {}})

    def as_dicts(self) -> list[dict[str, Any]]:
        return self.errors

    def refused(self) -> ApiConfigError:
        lines = "\n".join(f"{error['field']}: {error['message']}" for error in self.errors)
        return ApiConfigError(400, "InvalidParametersError", lines, self)


def _body(request: Request) -> dict[str, Any]:
    """The request's JSON object, every key one of the form's fields."""
    if not isinstance(request.data, dict):
        raise ApiError(400, "InvalidParametersError", Message.of("api.vc.not_an_object"))
    unknown = sorted(set(request.data) - set(FIELDS))
    if unknown:
        raise ApiError(
            400,
            "InvalidParametersError",
            Message.of("api.vc.unknown_field", field=unknown[0], fields=", ".join(FIELDS)),
            field=unknown[0],
        )
    return dict(request.data)


def current_fields(vc: VirtualCluster) -> dict[str, Any]:
    """The VC's fields as a body would give them (users and groups by name); a new VC's, the
    model's defaults (what a body leaves out)."""
    fields: dict[str, Any] = {}
    for name in FIELDS:
        if name in NAMED:
            fields[name] = list(getattr(vc, name).values_list(NAMED[name], flat=True)) if vc.pk else []
        else:
            value = getattr(vc, name)
            fields[name] = str(value) if isinstance(value, Decimal) else value
    return fields


def _saved(request: Request, form: VcApiForm, status: int) -> Response:
    if not form.is_valid():
        raise FormErrors(form).refused()
    vc = vc_admin.save_vc(request.user, form)
    return Response(cluster.virtual_cluster_states(request.user)[vc.name], status=status)


def _vc(vc_name: str) -> VirtualCluster:
    vc = VirtualCluster.objects.filter(name=vc_name).first()
    if vc is None:
        raise ApiError(404, "NoVirtualClusterError", Message.of("api.vc.not_found", vc=vc_name))
    return vc


class VirtualClustersView(cluster.VirtualClustersView):
    def get_permissions(self) -> Any:
        return [IsAdminNotApplicationToken()] if self.request.method != "GET" else super().get_permissions()

    @extend_schema(operation_id="v2_virtual_clusters_create", request=VC_BODY, responses={201: OpenApiTypes.OBJECT})
    def post(self, request: Request) -> Response:
        """Make a VC (admins): the body's fields as the VC form takes them (those left out: the
        model's defaults), checked by its rules; the answer is the VC as GET answers it."""
        body = _body(request)
        if VirtualCluster.objects.filter(name=body.get("name")).exists():
            raise ApiError(
                409, "ConflictVirtualClusterError", Message.of("api.vc.exists", vc=body["name"]), field="name"
            )
        return _saved(request, VcApiForm(data={**current_fields(VirtualCluster()), **body}), status=201)


class VirtualClusterView(cluster.VirtualClusterView):
    def get_permissions(self) -> Any:
        return [IsAdminNotApplicationToken()] if self.request.method != "GET" else super().get_permissions()

    @extend_schema(operation_id="v2_virtual_cluster_update", request=VC_BODY, responses={200: OpenApiTypes.OBJECT})
    def patch(self, request: Request, vc_name: str) -> Response:
        """Change the given fields of a VC (admins); the others stay. Its name stays once made."""
        vc, body = _vc(vc_name), _body(request)
        if body.pop("name", vc.name) != vc.name:
            raise ApiError(400, "InvalidParametersError", Message.of("api.vc.name_stays"), field="name")
        form = VcApiForm(data={**current_fields(vc), **body}, instance=vc)
        del form.fields["name"]
        return _saved(request, form, status=200)

    @extend_schema(operation_id="v2_virtual_cluster_delete", responses={200: OpenApiTypes.OBJECT})
    def delete(self, request: Request, vc_name: str) -> Response:
        """Remove a VC (admins): refused (409) while any job names it, and for `default`."""
        vc = _vc(vc_name)
        try:
            vc_admin.remove_vc(request.user, vc)
        except vc_admin.VcProblem as refused:
            reason = refused.reason
            raise ApiConfigError(409, "ConflictVirtualClusterError", reason.text, Refusal(reason)) from refused
        return Response({"message": f"virtual cluster {vc_name} is removed."})


class Refusal:
    """Why a VC stays, as a field error of no field: its catalogue code and parameters."""

    def __init__(self, reason: Message) -> None:
        self.reason = reason

    def as_dicts(self) -> list[dict[str, Any]]:
        return [{"field": "", **self.reason.as_dict()}]
