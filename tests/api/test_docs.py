"""The OpenAPI schema validates without warnings, and the docs page uses local (sidecar) assets."""

import re
from unittest import mock

import pytest
from django.core.management import call_command
from drf_spectacular.generators import SchemaGenerator
from drf_spectacular.views import SpectacularAPIView
from rest_framework.test import APIRequestFactory, force_authenticate

pytestmark = pytest.mark.django_db


def test_it_generates_a_valid_openapi_schema_without_warnings(tmp_path):
    call_command("spectacular", "--validate", "--fail-on-warn", "--file", str(tmp_path / "schema.yaml"))
    assert "/api/v2/jobs" in (tmp_path / "schema.yaml").read_text()


def test_it_answers_the_schema_without_a_token_with_401(anonymous):
    response = anonymous.get("/api/schema/")
    assert response.status_code == 401
    assert b"UnauthorizedUserError" in response.content


def test_it_serves_the_schema_with_a_token(alice):
    response = alice.get("/api/schema/")
    assert response.status_code == 200


@pytest.mark.parametrize("page", ["/api/docs/", "/api/redoc/"])
def test_it_sends_an_anonymous_reader_of_the_docs_to_sign_in(anonymous, page):
    response = anonymous.get(page)
    assert response.status_code == 302
    assert response["Location"].startswith("/login/")


def test_it_serves_schema_and_docs_to_anyone_when_they_are_public(anonymous, settings):
    settings.PAI_API_DOCS_PUBLIC = True
    assert anonymous.get("/api/schema/").status_code == 200
    assert anonymous.get("/api/docs/").status_code == 200


def test_it_serves_the_docs_page_from_local_assets(client, user):
    client.force_login(user)
    response = client.get("/api/docs/")
    assert response.status_code == 200
    page = response.content.decode()
    assert "swagger-ui" in page
    # Every script and stylesheet from the portal itself (a bare "cdn" also matched a CSRF token once).
    sources = re.findall(r"""(?:src|href)\s*=\s*["']([^"']+)""", page)
    assert sources and all(source.startswith("/") and not source.startswith("//") for source in sources), sources


@pytest.mark.parametrize("asked", [{}, {"format": "json"}])
def test_it_serves_the_schema_drf_spectacular_makes_each_time_while_making_it_once(alice, user, asked):
    request = APIRequestFactory().get("/api/schema/", asked)
    force_authenticate(request, user=user)
    made = SpectacularAPIView.as_view()(request).render()
    making = SchemaGenerator.get_schema
    with mock.patch.object(SchemaGenerator, "get_schema", autospec=True, side_effect=making) as make:
        first, again = alice.get("/api/schema/", asked), alice.get("/api/schema/", asked)
    assert first.content == again.content == made.content
    assert first["Content-Type"] == again["Content-Type"] == made["Content-Type"]
    assert first["Content-Disposition"] == made["Content-Disposition"]
    assert make.call_count <= 1


def test_it_makes_the_schema_again_after_a_setting_changes(alice, settings):
    alice.get("/api/schema/", {"format": "json"})
    making = SchemaGenerator.get_schema
    with mock.patch.object(SchemaGenerator, "get_schema", autospec=True, side_effect=making) as make:
        alice.get("/api/schema/", {"format": "json"})
        assert make.call_count == 0
        settings.ROOT_URLCONF = "pai_portal.urls"  # (the routes the schema lists may have changed)
        alice.get("/api/schema/", {"format": "json"})
        assert make.call_count == 1
