"""The OpenAPI schema validates without warnings, and the docs page uses local (sidecar) assets."""

import pytest
from django.core.management import call_command

pytestmark = pytest.mark.django_db


def test_it_generates_a_valid_openapi_schema_without_warnings(tmp_path):
    call_command("spectacular", "--validate", "--fail-on-warn", "--file", str(tmp_path / "schema.yaml"))
    assert "/api/v2/jobs" in (tmp_path / "schema.yaml").read_text()


def test_it_serves_the_schema_without_a_token(anonymous):
    response = anonymous.get("/api/schema/")
    assert response.status_code == 200


def test_it_serves_the_docs_page_from_local_assets(anonymous):
    response = anonymous.get("/api/docs/")
    assert response.status_code == 200
    page = response.content.decode()
    assert "swagger-ui" in page
    assert "cdn" not in page.lower()
