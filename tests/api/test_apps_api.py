"""`GET /api/v2/apps` (issue 50, My apps): the live apps of your jobs across jobs, with idle time and
GPUs held; nobody else's unless you are an admin."""

import pytest

from tests.factories import create_job, create_live_app

pytestmark = pytest.mark.django_db


def test_it_lists_my_running_apps_with_idle_time_gpus_and_links(alice, user, default_vc):
    create_live_app(user, "notebook", gpus=2, idle_minutes=90, idle_seconds=3 * 3600)
    [app] = alice.get("/api/v2/apps").json()
    assert app["kind"] == "jupyter"
    assert app["job"] == "alice~notebook"
    assert app["jobState"] == "RUNNING"
    assert app["ready"] is True
    assert 90 * 60 <= app["idleSeconds"] < 91 * 60
    assert app["idleStopTime"] is not None
    assert app["gpus"] == 2
    assert app["openUrl"].startswith("http://testserver/apps/live") and app["openUrl"].endswith("/open/")
    assert app["stopUrl"].endswith("/api/v2/jobs/alice~notebook/executionType")


def test_it_lists_the_longest_idle_first_and_starting_apps_last(alice, user, default_vc):
    create_live_app(user, "starting", kind="tensorboard")
    create_live_app(user, "short", idle_minutes=5)
    create_live_app(user, "long", idle_minutes=300)
    assert [app["job"] for app in alice.get("/api/v2/apps").json()] == [
        "alice~long",
        "alice~short",
        "alice~starting",
    ]


def test_it_leaves_out_the_apps_of_finished_jobs(alice, user, default_vc):
    app = create_live_app(user, "done", idle_minutes=5)
    app.job.state = "STOPPED"
    app.job.save()
    assert alice.get("/api/v2/apps").json() == []


def test_it_shows_a_second_user_none_of_the_firsts_apps(bob, user, default_vc):
    create_live_app(user, "notebook", gpus=1, idle_minutes=10)
    assert bob.get("/api/v2/apps").json() == []
    assert bob.get("/api/v2/apps?owner=alice").json() == []


def test_it_shows_an_admin_everyones_apps_and_one_owners_on_asking(root, user, other_user, default_vc):
    create_live_app(user, "alices", idle_minutes=10)
    create_live_app(other_user, "bobs", idle_minutes=20)
    assert {app["owner"] for app in root.get("/api/v2/apps").json()} == {"alice", "bob"}
    assert [app["job"] for app in root.get("/api/v2/apps?owner=bob").json()] == ["bob~bobs"]


def test_it_counts_a_waiting_jobs_app_as_not_idle_and_holding_no_gpus(alice, user, default_vc):
    job = create_job(user, "queued")
    job.apps.create(kind="jupyter", role="worker", port_label="jupyter", slug="queuedapp")
    [app] = alice.get("/api/v2/apps").json()
    assert (app["jobState"], app["idleSeconds"], app["gpus"]) == ("WAITING", None, 0)


def test_it_is_described_in_the_schema(alice):
    schema = alice.get("/api/schema/", HTTP_ACCEPT="application/json").json()
    answer = schema["paths"]["/api/v2/apps"]["get"]["responses"]["200"]["content"]["application/json"]["schema"]
    assert answer["type"] == "array"
