"""The My apps page (/apps/, issue 50): my live apps across jobs with idle time, GPUs, Open and Stop;
an admin's holds everyone's with an owner column and a filter."""

import pytest
from django.test import Client

from tests.factories import create_live_app

pytestmark = pytest.mark.django_db


def test_it_lists_my_app_with_its_idle_time_gpus_open_and_stop(alice_client, user, default_vc):
    app = create_live_app(user, "notebook", gpus=4, idle_minutes=125)
    page = alice_client.get("/apps/").content.decode()
    assert 'data-app-job="alice~notebook"' in page
    assert "2h 05m" in page
    assert '<td class="num" data-label="GPUs held" data-app-gpus>4</td>' in page
    assert f'href="/apps/{app.slug}/open/"' in page
    assert 'href="/jobs/alice~notebook/stop/"' in page


def test_it_offers_no_open_link_before_the_app_answers(alice_client, user, default_vc):
    create_live_app(user, "notebook")
    page = alice_client.get("/apps/").content.decode()
    assert "Starting" in page
    assert "data-app-open" not in page


def test_it_says_so_when_i_have_no_apps(alice_client, bob_client, user, default_vc):
    create_live_app(user, "notebook", idle_minutes=1)
    page = bob_client.get("/apps/").content.decode()
    assert "data-apps-empty" in page
    assert "alice~notebook" not in page


def test_it_shows_an_admin_everyones_apps_filtered_by_owner(admin_user, user, other_user, default_vc):
    create_live_app(user, "alices", idle_minutes=1)
    create_live_app(other_user, "bobs", idle_minutes=1)
    client = Client()
    client.force_login(admin_user)
    everyone = client.get("/apps/").content.decode()
    assert "alice~alices" in everyone and "bob~bobs" in everyone
    assert '<option value="bob" >bob</option>' in everyone
    bobs = client.get("/apps/?owner=bob").content.decode()
    assert "bob~bobs" in bobs and "alice~alices" not in bobs
    assert "data-app-owner-cell" in bobs


def test_it_is_in_the_top_bar(alice_client, default_vc):
    assert 'href="/apps/" aria-current="page" data-nav-apps' in alice_client.get("/apps/").content.decode()
