"""Users in OpenPAI's shapes: `/api/v2/users[/<user>]` (and OpenPAI's `/api/v1/user/<user>`,
`/api/v2/user/<user>` spellings), creating users, and a user's own email and password."""

from __future__ import annotations

from typing import Any

from django.contrib.auth import get_user_model
from django.contrib.auth.password_validation import validate_password
from django.core.exceptions import ValidationError as DjangoValidationError
from django.db import IntegrityError, transaction
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from accounts.groups import ADMIN_GROUP
from accounts.models import Token
from accounts.permissions import is_admin
from catalogue import Message
from clusters import user_admin
from clusters.models import VirtualCluster
from jobs.storage.configs import usable_storages
from web.api.auth import IsAdminNotApplicationToken, NotApplicationToken
from web.api.errors import ApiError, validated


def user_row(user: Any, vcs: list[VirtualCluster] | None = None) -> dict[str, Any]:
    """OpenPAI's user: {username, email, grouplist, virtualCluster, admin, extension, storageConfig}."""
    vcs = vcs if vcs is not None else list(VirtualCluster.objects.prefetch_related("allowed_users", "allowed_groups"))
    return {
        "username": user.get_username(),
        "email": user.email,
        "grouplist": grouplist_of(user),
        "virtualCluster": [vc.name for vc in vcs if vc.is_open_to(user)],
        "admin": is_admin(user),
        "extension": {},
        # OpenPAI: the storage configs of the user's groups; here, those the user may use.
        "storageConfig": [config.name for config in usable_storages(user)],
    }


def grouplist_of(user: Any) -> list[str]:
    """The user's groups; an admin is in OpenPAI's `admingroup` whatever made them one."""
    names = sorted(group.name for group in user.groups.all())
    if is_admin(user) and ADMIN_GROUP not in names:
        names.append(ADMIN_GROUP)
    return names


def _validated_password(password: str, user: Any, field: str) -> str:
    try:
        validate_password(password, user)
    except DjangoValidationError as error:
        said = " ".join(error.messages)
        raise ApiError(
            400, "InvalidParametersError", Message.of("api.user.password_refused", field=field, said=said), field
        ) from error
    return password


def _find_user(username: str) -> Any:
    user = get_user_model().objects.filter(username=username).first()
    if user is None:
        raise ApiError(404, "NoUserError", Message.of("api.user.not_found", user=username))
    return user


def _change_password(user: Any, new_password: str) -> None:
    """As OpenPAI does: a new password revokes the user's sign-in tokens, not their application tokens."""
    with transaction.atomic():
        user.set_password(new_password)
        user.save(update_fields=["password"])
        Token.objects.filter(user=user, kind=Token.Kind.LOGIN).delete()


class NewUserRequest(serializers.Serializer):
    username = serializers.RegexField(r"^[\w.@+-]+\Z", max_length=150)
    password = serializers.CharField(max_length=4096, trim_whitespace=False)
    email = serializers.EmailField(required=False, allow_blank=True)
    admin = serializers.BooleanField(required=False, default=False)
    virtualCluster = serializers.ListField(child=serializers.CharField(max_length=64), required=False)


class UsersView(APIView):
    """`GET /api/v2/users` (every user) and `POST /api/v2/users` (create one): admins only, never
    with an application token. OpenPAI lists every user to anyone signed in; the portal does not."""

    permission_classes = [IsAdminNotApplicationToken]

    @extend_schema(operation_id="v2_users_list", responses={200: OpenApiTypes.OBJECT})
    def get(self, request: Request) -> Response:
        vcs = list(VirtualCluster.objects.prefetch_related("allowed_users", "allowed_groups"))
        users = get_user_model().objects.order_by("username")
        return Response([user_row(user, vcs) for user in users])

    @extend_schema(request=NewUserRequest, responses={201: OpenApiTypes.OBJECT})
    def post(self, request: Request) -> Response:
        fields = validated(NewUserRequest, request.data)
        User = get_user_model()
        _validated_password(
            fields["password"], User(username=fields["username"], email=fields.get("email", "")), "password"
        )
        vcs = list(VirtualCluster.objects.filter(name__in=fields.get("virtualCluster", [])))
        missing = sorted(set(fields.get("virtualCluster", [])) - {vc.name for vc in vcs})
        if missing:
            raise ApiError(404, "NoVirtualClusterError", Message.of("api.user.no_vcs", vcs=missing), "virtualCluster")
        try:
            with transaction.atomic():
                user = User.objects.create_user(
                    fields["username"], email=fields.get("email", ""), password=fields["password"]
                )
                if fields["admin"]:
                    user.is_staff = user.is_superuser = True
                    user.save(update_fields=["is_staff", "is_superuser"])
                for vc in vcs:  # an open VC stays open; a restricted one lets this user in
                    if vc.allowed_users.exists():
                        vc.allowed_users.add(user)
        except IntegrityError as error:
            raise ApiError(
                409, "ConflictUserError", Message.of("api.user.exists", user=fields["username"]), "username"
            ) from error
        return Response({"message": "User is created successfully", **user_row(user)}, status=201)


class UserView(APIView):
    """`GET /api/v2/users/<user>`: yourself, or anyone for admins; never the password."""

    @extend_schema(responses={200: OpenApiTypes.OBJECT})
    def get(self, request: Request, username: str) -> Response:
        if username != request.user.get_username() and not is_admin(request.user):
            raise ApiError(404, "NoUserError", Message.of("api.user.not_found", user=username))
        return Response(user_row(_find_user(username)))


class UserUpdateData(serializers.Serializer):
    username = serializers.CharField(max_length=150)
    email = serializers.EmailField(required=False, allow_blank=True, allow_null=True)
    newPassword = serializers.CharField(required=False, allow_null=True, max_length=4096, trim_whitespace=False)
    oldPassword = serializers.CharField(required=False, max_length=4096, trim_whitespace=False)
    extension = serializers.DictField(required=False)


class UserUpdateRequest(serializers.Serializer):
    data = UserUpdateData()  # type: ignore[assignment]  # OpenPAI's body key, not Serializer.data
    patch = serializers.BooleanField(required=False, default=False)


class MeView(APIView):
    """`PUT /api/v2/users/me` `{data: {username, email, newPassword, oldPassword}, patch}`: the
    webportal's profile page. A new password needs the old one."""

    permission_classes = [*APIView.permission_classes, NotApplicationToken]

    @extend_schema(request=UserUpdateRequest, responses={201: OpenApiTypes.OBJECT})
    def put(self, request: Request) -> Response:
        data = validated(UserUpdateRequest, request.data)["data"]
        user: Any = request.user
        if data["username"] != user.get_username():
            raise ApiError(403, "ForbiddenUserError", Message.of("api.user.own_only"), "data.username")
        if data.get("extension"):
            raise ApiError(400, "InvalidParametersError", Message.of("api.user.no_extension"), "data.extension")
        if data.get("email") is not None:
            user.email = data["email"]
            user.save(update_fields=["email"])
        if data.get("newPassword"):
            if not user.check_password(data.get("oldPassword") or ""):
                field = "data.oldPassword"
                raise ApiError(403, "ForbiddenUserError", Message.of("api.user.wrong_password", field=field), field)
            _change_password(user, _validated_password(data["newPassword"], user, "data.newPassword"))
        return Response({"message": f"Update user {user.get_username()} successfully"}, status=201)


class PasswordRequest(serializers.Serializer):
    oldPassword = serializers.CharField(required=False, max_length=4096, trim_whitespace=False)
    newPassword = serializers.CharField(max_length=4096, trim_whitespace=False)


class UserPasswordView(APIView):
    """`PUT /api/v2/users/<user>/password` `{oldPassword, newPassword}`: your own (with the old
    password) or, for an admin, anyone's."""

    permission_classes = [*APIView.permission_classes, NotApplicationToken]

    @extend_schema(request=PasswordRequest, responses={201: OpenApiTypes.OBJECT})
    def put(self, request: Request, username: str) -> Response:
        fields = validated(PasswordRequest, request.data)
        is_self = username == request.user.get_username()
        if not is_self and not is_admin(request.user):
            refused = Message.of("api.user.others_password", user=request.user.get_username(), other=username)
            raise ApiError(403, "ForbiddenUserError", refused)
        user = _find_user(username)
        if is_self and not user.check_password(fields.get("oldPassword") or ""):
            raise ApiError(
                403, "ForbiddenUserError", Message.of("api.user.wrong_password", field="oldPassword"), "oldPassword"
            )
        _change_password(user, _validated_password(fields["newPassword"], user, "newPassword"))
        return Response({"message": "update user password successfully."}, status=201)


class EmailRequest(serializers.Serializer):
    email = serializers.EmailField(allow_blank=True)


class UserEmailView(APIView):
    """`PUT /api/v2/users/<user>/email` `{email}`: your own, or anyone's for an admin."""

    permission_classes = [*APIView.permission_classes, NotApplicationToken]

    @extend_schema(request=EmailRequest, responses={201: OpenApiTypes.OBJECT})
    def put(self, request: Request, username: str) -> Response:
        body = validated(EmailRequest, request.data)
        if username != request.user.get_username() and not is_admin(request.user):
            refused = Message.of("api.user.others_email", user=request.user.get_username(), other=username)
            raise ApiError(403, "ForbiddenUserError", refused)
        user = _find_user(username)
        user.email = body["email"]
        user.save(update_fields=["email"])
        return Response({"message": "update user email successfully."}, status=201)


def _vcs_named(names: list[str], field: str) -> list[VirtualCluster]:
    vcs = list(VirtualCluster.objects.filter(name__in=names))
    missing = sorted(set(names) - {vc.name for vc in vcs})
    if missing:
        raise ApiError(
            404, "NoVirtualClusterError", Message.of("api.user.field_no_vcs", field=field, vcs=missing), field
        )
    return vcs


def _as_api_error(error: DjangoValidationError) -> ApiError:
    said = "; ".join(f"{k}: {' '.join(v)}" for k, v in error.message_dict.items())
    return ApiError(400, "InvalidParametersError", Message.of("api.user.refused", said=said))


class AdminFlagRequest(serializers.Serializer):
    admin = serializers.BooleanField()


class UserAdminFlagView(APIView):
    """`PUT /api/v2/users/<user>/admin {admin}` (OpenPAI's legacy route): the admin flag by hand."""

    permission_classes = [IsAdminNotApplicationToken]

    @extend_schema(request=AdminFlagRequest, responses={201: OpenApiTypes.OBJECT})
    def put(self, request: Request, username: str) -> Response:
        body = validated(AdminFlagRequest, request.data)
        try:
            user_admin.set_admin(request.user, _find_user(username), body["admin"])
        except DjangoValidationError as error:
            raise _as_api_error(error) from error
        return Response({"message": "update user admin permission successfully."}, status=201)


class VirtualClustersRequest(serializers.Serializer):
    virtualCluster = serializers.ListField(child=serializers.CharField(max_length=64))


class UserVirtualClustersView(APIView):
    """`PUT /api/v2/users/<user>/virtualcluster {virtualCluster}` (OpenPAI's legacy route): the VCs
    granted to this user alone (open VCs stay open; those of the user's groups stay granted)."""

    permission_classes = [IsAdminNotApplicationToken]

    @extend_schema(request=VirtualClustersRequest, responses={201: OpenApiTypes.OBJECT})
    def put(self, request: Request, username: str) -> Response:
        body = validated(VirtualClustersRequest, request.data)
        user = _find_user(username)
        user_admin.set_own_vcs(request.user, user, _vcs_named(body["virtualCluster"], "virtualCluster"))
        return Response({"message": "update user virtual clusters successfully."}, status=201)
