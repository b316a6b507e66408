"""Storages in OpenPAI's shapes (rest-server `controllers/v2/storage.js`): `GET /api/v2/storages`
(those the user may use; `?default=true` only their defaults) and `GET /api/v2/storages/<name>`."""

from __future__ import annotations

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from catalogue import Message
from jobs.storage.configs import (
    StorageForbidden,
    StorageNotFound,
    api_detail,
    api_summary,
    usable_storage,
    usable_storages,
)
from web.api.errors import ApiError


class StoragesView(APIView):
    @extend_schema(
        operation_id="v2_storages_list",
        parameters=[OpenApiParameter("default", OpenApiTypes.BOOL, description="only the user's default storages")],
        responses={200: OpenApiTypes.OBJECT},
    )
    def get(self, request: Request) -> Response:
        only_defaults = request.query_params.get("default") == "true"
        configs = [c for c in usable_storages(request.user) if c.is_default or not only_defaults]
        return Response({"storages": [api_summary(config, config.is_default) for config in configs]})


class StorageView(APIView):
    @extend_schema(responses={200: OpenApiTypes.OBJECT})
    def get(self, request: Request, storage_name: str) -> Response:
        try:
            return Response(api_detail(usable_storage(request.user, storage_name)))
        except StorageNotFound as exc:
            raise ApiError(404, "NoStorageError", Message.of("api.storage.not_found", storage=storage_name)) from exc
        except StorageForbidden as exc:
            user = request.user.get_username()
            raise ApiError(
                403, "ForbiddenUserError", Message.of("api.storage.forbidden", user=user, storage=storage_name)
            ) from exc
