"""Who may scrape /metrics, and its families in Prometheus' text format."""

import pytest
from prometheus_client.parser import text_string_to_metric_families

from tests.factories import create_job, create_user, password_for

pytestmark = pytest.mark.django_db


def test_it_refuses_a_scrape_without_the_token(client, settings):
    settings.PAI_METRICS_TOKEN = "scrape-secret"

    response = client.get("/metrics", headers={"Authorization": "Bearer wrong"})

    assert response.status_code == 401


def test_it_refuses_a_signed_in_user_who_is_not_an_admin(client, user):
    client.login(username=user.username, password=password_for(user.username))

    assert client.get("/metrics").status_code == 401


def test_it_answers_a_signed_in_admin(client, admin_user):
    client.login(username=admin_user.username, password=password_for(admin_user.username))

    assert client.get("/metrics").status_code == 200


def test_it_counts_jobs_by_state_and_vc(client, settings, user):
    settings.PAI_METRICS_PUBLIC = True
    create_job(user, "a")
    create_job(create_user("carol"), "b")

    text = client.get("/metrics").content.decode()

    families = {family.name: family for family in text_string_to_metric_families(text)}
    waiting = [s for s in families["pai_jobs"].samples if s.labels == {"state": "WAITING", "vc": "default"}]
    assert waiting[0].value == 2
