"""Groups in OpenPAI's shapes (rest-server routes/v2/group.js and the user routes that name
groups): `/api/v2/groups[/<group>[/userlist|/extension|/description|/externalname]]` and
`/api/v2/users/<user>/group|grouplist`. Reads for anyone signed in, changes for admins only and
never with an application token, as OpenPAI does; every change is in the audit list."""

from __future__ import annotations

from typing import Any, cast

from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.db import transaction
from django.utils.decorators import method_decorator
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from accounts import groups as actions
from accounts.permissions import is_admin
from catalogue import Message
from clusters import grants
from web.api.auth import IsAdminNotApplicationToken
from web.api.errors import ApiError, validated


def _groups() -> Any:
    return Group.objects.select_related("info").prefetch_related("virtual_clusters", "storage_configs")


def _find_user(username: str) -> Any:
    user = get_user_model().objects.filter(username=username).first()
    if user is None:
        raise ApiError(404, "NoUserError", Message.of("api.group.no_user", user=username))
    return user


class Acls(serializers.Serializer):
    admin = serializers.BooleanField(required=False)
    virtualClusters = serializers.ListField(child=serializers.CharField(max_length=64), required=False)
    storageConfigs = serializers.ListField(child=serializers.CharField(max_length=64), required=False)


class Extension(serializers.Serializer):
    acls = Acls(required=False)


class NewGroup(serializers.Serializer):
    groupname = serializers.CharField(max_length=150)
    description = serializers.CharField(max_length=512, required=False, allow_blank=True, default="")
    externalName = serializers.CharField(max_length=512, required=False, allow_blank=True, default="")
    extension = Extension(required=False)


class GroupUpdate(serializers.Serializer):
    data = NewGroup()  # type: ignore[assignment]  # OpenPAI's body key, not Serializer.data
    patch = serializers.BooleanField(required=False, default=False)


def _apply_extension(actor: Any, group: Group, extension: dict[str, Any] | None) -> None:
    acls = (extension or {}).get("acls")
    if acls is None:
        return
    if "admin" in acls:
        actions.update_group(actor, group, admin=acls["admin"])
    grants.set_grants(actor, group, acls.get("virtualClusters"), acls.get("storageConfigs"))


class GroupsView(APIView):
    """`GET /api/v2/groups` every group; `POST` creates one; `PUT {data, patch}` updates one."""

    def get_permissions(self) -> Any:
        return [IsAdminNotApplicationToken()] if self.request.method != "GET" else super().get_permissions()

    @extend_schema(operation_id="v2_groups_list", responses={200: OpenApiTypes.OBJECT})
    def get(self, request: Request) -> Response:
        return Response([grants.group_row(group) for group in _groups().order_by("name")])

    @extend_schema(request=NewGroup, responses={201: OpenApiTypes.OBJECT})
    def post(self, request: Request) -> Response:
        fields = validated(NewGroup, request.data)
        acls = fields.get("extension", {}).get("acls", {})
        grants.create_group(
            request.user,
            fields["groupname"],
            description=fields["description"],
            external_name=fields["externalName"],
            admin=acls.get("admin", False),
            vcs=acls.get("virtualClusters", []),
            storages=acls.get("storageConfigs", []),
        )
        return Response({"message": "group is created successfully"}, status=201)

    @extend_schema(request=GroupUpdate, responses={201: OpenApiTypes.OBJECT})
    @method_decorator(transaction.atomic)
    def put(self, request: Request) -> Response:
        body = validated(GroupUpdate, request.data)
        data, patch = body["data"], body["patch"]
        group = actions.find_group(data["groupname"])
        raw = request.data.get("data", {}) if hasattr(request.data, "get") else {}
        if not patch:
            missing = [key for key in ("description", "externalName", "extension") if key not in raw]
            if missing:
                required = Message.of("api.group.required", field=missing[0])
                raise ApiError(400, "InvalidParametersError", required, f"data.{missing[0]}")
        actions.update_group(
            request.user,
            group,
            description=data["description"] if "description" in raw else None,
            external_name=data["externalName"] if "externalName" in raw else None,
        )
        _apply_extension(request.user, group, data.get("extension") if "extension" in raw else None)
        return Response({"message": f"update group {group.name} successfully."}, status=201)


class GroupView(APIView):
    """`GET /api/v2/groups/<group>`; `DELETE` removes it (its members lose what it granted)."""

    def get_permissions(self) -> Any:
        return [IsAdminNotApplicationToken()] if self.request.method == "DELETE" else super().get_permissions()

    @extend_schema(responses={200: OpenApiTypes.OBJECT})
    def get(self, request: Request, groupname: str) -> Response:
        return Response(grants.group_row(actions.find_group(groupname)))

    @extend_schema(responses={200: OpenApiTypes.OBJECT})
    def delete(self, request: Request, groupname: str) -> Response:
        grants.delete_group(request.user, actions.find_group(groupname))
        return Response({"message": "group is removed successfully"})


class GroupUserListView(APIView):
    """`GET /api/v2/groups/<group>/userlist`: `[{username, clusterAdmin}]`, admins only."""

    permission_classes = [IsAdminNotApplicationToken]

    @extend_schema(responses={200: OpenApiTypes.OBJECT})
    def get(self, request: Request, groupname: str) -> Response:
        group = actions.find_group(groupname)
        members = group.user_set.order_by("username")
        return Response([{"username": m.get_username(), "clusterAdmin": is_admin(m)} for m in members])


class ExtensionRequest(serializers.Serializer):
    extension = Extension()


class GroupFieldView(APIView):
    """OpenPAI's `PUT /api/v2/groups/<group>/<field>`: one field of a group changed, admins only;
    by default the body's `field` as update_group's `keyword`."""

    permission_classes = [IsAdminNotApplicationToken]
    form: type[serializers.Serializer]
    done: str  # OpenPAI's answer
    field = keyword = ""

    def change(self, actor: Any, group: Group, data: dict[str, Any]) -> None:
        actions.update_group(actor, group, **{self.keyword: data[self.field]})

    def put(self, request: Request, groupname: str) -> Response:
        body = validated(self.form, request.data)
        with transaction.atomic():
            self.change(request.user, actions.find_group(groupname), body)
        return Response({"message": self.done}, status=201)


@extend_schema(request=ExtensionRequest, responses={201: OpenApiTypes.OBJECT})
class GroupExtensionView(GroupFieldView):
    """`PUT /api/v2/groups/<group>/extension {extension: {acls}}`."""

    form, done = ExtensionRequest, "update group extension data successfully."

    def change(self, actor: Any, group: Group, data: dict[str, Any]) -> None:
        _apply_extension(actor, group, data["extension"])


def _text_field_view(field: str, keyword: str, done: str) -> type[GroupFieldView]:
    """`PUT /api/v2/groups/<group>/<field, lower case> {<field>}`: one of the group's texts, as
    update_group's `keyword`; its request is `<Field>Request` in the schema."""
    name = f"{field[0].upper()}{field[1:]}"
    fields = {field: serializers.CharField(max_length=512, allow_blank=True), "__module__": __name__}
    form = serializers.SerializerMetaclass(f"{name}Request", (serializers.Serializer,), fields)
    attributes = {"form": form, "field": field, "keyword": keyword, "done": done, "__module__": __name__}
    attributes["__doc__"] = f"`PUT /api/v2/groups/<group>/{field.lower()} {{{field}}}`."
    view = type(f"Group{name}View", (GroupFieldView,), attributes)
    return cast(type[GroupFieldView], extend_schema(request=form, responses={201: OpenApiTypes.OBJECT})(view))


GroupDescriptionView = _text_field_view("description", "description", "update group description data successfully.")
GroupExternalNameView = _text_field_view(
    "externalName", "external_name", "update group externalNameData data successfully."
)


class GroupNameRequest(serializers.Serializer):
    groupname = serializers.CharField(max_length=150)


class UserGroupView(APIView):
    """`PUT /api/v2/users/<user>/group {groupname}` adds the user to it; `DELETE` takes them out."""

    permission_classes = [IsAdminNotApplicationToken]

    def _change(self, request: Request, username: str, add: bool) -> Response:
        groupname = validated(GroupNameRequest, request.data)["groupname"]
        user = _find_user(username)
        current = list(user.groups.all())
        if add:
            group = actions.groups_named([groupname], "groupname")[0]
            actions.set_user_groups(request.user, user, [*current, group])
            return Response({"message": f"User {username} is added into group {groupname}"}, status=201)
        actions.set_user_groups(request.user, user, [g for g in current if g.name != groupname])
        return Response({"message": f"User {username} is removed from group {groupname}"}, status=201)

    @extend_schema(request=GroupNameRequest, responses={201: OpenApiTypes.OBJECT})
    def put(self, request: Request, username: str) -> Response:
        return self._change(request, username, add=True)

    @extend_schema(request=GroupNameRequest, responses={201: OpenApiTypes.OBJECT})
    def delete(self, request: Request, username: str) -> Response:
        return self._change(request, username, add=False)


class GroupListRequest(serializers.Serializer):
    grouplist = serializers.ListField(child=serializers.CharField(max_length=150))


class UserGroupListView(APIView):
    """`PUT /api/v2/users/<user>/grouplist {grouplist}`: the user's groups become exactly these."""

    permission_classes = [IsAdminNotApplicationToken]

    @extend_schema(request=GroupListRequest, responses={201: OpenApiTypes.OBJECT})
    def put(self, request: Request, username: str) -> Response:
        body = validated(GroupListRequest, request.data)
        user = _find_user(username)
        groups = actions.groups_named(body["grouplist"], "grouplist")
        actions.set_user_groups(request.user, user, groups)
        return Response({"message": "update user grouplist successfully."}, status=201)
