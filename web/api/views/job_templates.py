"""`/api/v2/templates`: the portal's job templates. `POST` takes the portal's shape (`name`,
`config`, `summary`, `description`, `visibility`, `sharedWithGroup`) or an openpaimarketplace item
(`jobConfig`); `PATCH /api/v2/templates/<id>` changes the fields it names (its owner)."""

from __future__ import annotations

from typing import Any

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from catalogue import Message
from jobs import job_templates
from jobs.models import JobTemplate
from jobs.protocol import JobConfigError
from web.api.errors import ApiConfigError, ApiError


def shape(template: JobTemplate, *, whole: bool = False) -> dict[str, Any]:
    data: dict[str, Any] = {
        "id": template.pk,
        "name": template.name,
        "username": template.owner.get_username(),
        "summary": template.summary,
        "visibility": template.visibility,
        "sharedWithGroup": template.shared_with_group.name if template.shared_with_group else None,
        "source": template.source,
        "tags": template.tags,
        "parameters": job_templates.asked_parameters(template),
        "updatedTime": int(template.updated_at.timestamp() * 1000),
    }
    if whole:
        data.update(description=template.description, config=template.config_text)
    return data


CHANGEABLE = ("name", "config", "summary", "description", "visibility", "sharedWithGroup")


def found(request: Request, template_id: int) -> JobTemplate:
    try:
        return job_templates.find(request.user, template_id)
    except JobTemplate.DoesNotExist as error:
        raise ApiError(404, "NoTemplateError", Message.of("api.template.not_found", template=template_id)) from error


class TemplatesView(APIView):
    @extend_schema(operation_id="v2_templates_list", responses={200: OpenApiTypes.OBJECT})
    def get(self, request: Request) -> Response:
        """The templates you may use (yours, those shared with a group of yours and everyone's public
        ones); `?q=` searches them."""
        templates = job_templates.search(request.user, request.query_params.get("q", ""))[:500]
        return Response([shape(template) for template in templates])

    @extend_schema(request=OpenApiTypes.OBJECT, responses={201: OpenApiTypes.OBJECT})
    def post(self, request: Request) -> Response:
        """Save a template: `{name, config, summary?, description?, visibility?, sharedWithGroup?}`
        (`sharedWithGroup`: one of your groups, whose members may use it), or an openpaimarketplace
        item (`{name, summary, description, tags, jobConfig}`)."""
        data = request.data if isinstance(request.data, dict) else {}
        try:
            if "jobConfig" in data:
                fields = job_templates.from_marketplace(dict(data))
            else:
                fields = {
                    key: str(data.get(source) or "")
                    for key, source in (("name", "name"), ("config_text", "config"), ("summary", "summary"))
                } | {"description": str(data.get("description") or "")}
            template = job_templates.save(
                request.user,
                visibility=str(data.get("visibility") or "private"),
                shared_with_group=str(data.get("sharedWithGroup") or ""),
                **fields,
            )
        except JobConfigError as error:
            raise ApiConfigError(400, "InvalidParametersError", str(error), error) from error
        return Response(shape(template, whole=True), status=201)


class TemplateView(APIView):
    @extend_schema(responses={200: OpenApiTypes.OBJECT})
    def get(self, request: Request, template_id: int) -> Response:
        return Response(shape(found(request, template_id), whole=True))

    @extend_schema(request=OpenApiTypes.OBJECT, responses={200: OpenApiTypes.OBJECT})
    def patch(self, request: Request, template_id: int) -> Response:
        """Change your template: any of `{name, config, summary, description, visibility,
        sharedWithGroup}` (`sharedWithGroup`: one of your groups, or null to share with none); the
        others stay."""
        template = found(request, template_id)
        if not job_templates.may_change(request.user, template):
            raise ApiError(
                403, "ForbiddenUserError", Message.of("api.template.not_yours_to_change", template=template_id)
            )
        data = request.data if isinstance(request.data, dict) else {}
        now = shape(template, whole=True)
        given = {key: data[key] if key in data else now[key] for key in CHANGEABLE}
        try:
            job_templates.update(
                template,
                name=str(given["name"] or ""),
                config_text=str(given["config"] or ""),
                summary=str(given["summary"] or ""),
                description=str(given["description"] or ""),
                visibility=str(given["visibility"] or ""),
                shared_with_group=str(given["sharedWithGroup"] or ""),
            )
        except JobConfigError as error:
            raise ApiConfigError(400, "InvalidParametersError", str(error), error) from error
        return Response(shape(template, whole=True))

    @extend_schema(responses={204: None})
    def delete(self, request: Request, template_id: int) -> Response:
        template = found(request, template_id)
        if not job_templates.may_change(request.user, template):
            raise ApiError(403, "ForbiddenUserError", Message.of("api.template.not_yours", template=template_id))
        template.delete()
        return Response(status=204)
