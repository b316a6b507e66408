"""Every error page in the portal's frame, saying why, in the reader's language (issue 50: a
non-admin at /people/ got Django's bare "403 Forbidden", in English under zh-Hans)."""

import pytest
from django.test import Client
from django.urls import path

from pai_portal.urls import handler500  # noqa: F401  (this test's URLconf answers a crash as the portal's does)
from pai_portal.urls import urlpatterns as portal_urls
from tests.factories import password_for

pytestmark = pytest.mark.django_db


def crash(request):
    raise RuntimeError("boom")


urlpatterns = [path("crash/", crash), *portal_urls]


def test_it_answers_a_non_admin_at_the_people_pages_with_the_portals_403_and_why(alice_client):
    response = alice_client.get("/people/")
    page = response.content.decode()
    assert response.status_code == 403
    assert 'data-error-page="403"' in page and "The People pages are for cluster admins." in page
    assert 'class="whoami"' in page  # the portal's top bar


def test_it_says_the_403_in_chinese(alice_client):
    alice_client.cookies["django_language"] = "zh-hans"
    page = alice_client.get("/people/").content.decode()
    assert "不允许" in page and "Forbidden" not in page


def test_it_answers_a_stale_form_with_the_portals_403(user):
    client = Client(enforce_csrf_checks=True)
    client.login(username=user.username, password=password_for(user.username))
    response = client.post("/profile/notifications", {"email": "on"})
    assert response.status_code == 403
    assert "security token" in response.content.decode()


def test_it_answers_an_unreadable_request_with_the_portals_400(client):
    response = client.get("/", HTTP_HOST="not-allowed.example")
    assert response.status_code == 400
    assert 'data-error-page="400"' in response.content.decode()


@pytest.mark.urls("tests.web.test_error_pages")
def test_it_answers_a_crash_with_the_portals_500(alice_client):
    alice_client.raise_request_exception = False
    response = alice_client.get("/crash/")
    assert response.status_code == 500
    assert 'data-error-page="500"' in response.content.decode()
