"""The VC pages (issue 50): admins make, change and remove VCs in the portal, every rule checked by
the Django admin's own form before anything is saved (shares at most 100 % in all, as `createvc`
counts them); a VC's page shows its jobs, usage and who may use it; users get the framed 403."""

import pytest
from django.contrib.auth.models import Group
from django.test import Client

from accounts.models import AuditEntry
from clusters.models import VirtualCluster

pytestmark = pytest.mark.django_db

FORM = {"description": "", "queue_policy": "fifo", "slurm_partition": "", "backfill": "on"}


@pytest.fixture
def root_client(admin_user) -> Client:
    client = Client()
    client.force_login(admin_user)
    return client


@pytest.fixture
def research(default_vc) -> VirtualCluster:
    default_vc.share_percent = 60
    default_vc.save()
    return VirtualCluster.objects.create(name="research", share_percent=40)


def test_it_refuses_the_vc_pages_to_users_with_the_portals_403_page(alice_client, research):
    for path in ("/cluster/vcs/", "/cluster/new-vc/", "/cluster/vcs/research/", "/cluster/vcs/research/edit/"):
        answer = alice_client.get(path)
        assert answer.status_code == 403, path
        assert 'data-error-page="403"' in answer.content.decode() and "The VC pages are for cluster admins." in (
            answer.content.decode()
        )
    assert alice_client.post("/cluster/vcs/research/remove/").status_code == 403
    assert VirtualCluster.objects.filter(name="research").exists()


def test_an_admin_makes_a_vc_with_its_queue_limits_classes_lending_and_groups(root_client, research, user):
    vision = Group.objects.create(name="vision")
    form = {
        **FORM,
        "name": "vision",
        "share_percent": "0",
        "queue_policy": "fair-share",
        "backfill": "",
        "user_gpu_limit": "4",
        "default_run_minutes": "60",
        "max_run_minutes": "600",
        "default_priority_class": "prod",
        "max_priority_class": "prod",
        "lends_idle_quota": "on",
        "lending_limit_percent": "50",
        "borrowing_limit_percent": "20",
        "allowed_users": "alice",
        "allowed_groups": [vision.pk],
    }
    answer = root_client.post("/cluster/new-vc/", form)
    assert answer.status_code == 302 and answer["Location"] == "/cluster/vcs/vision/"
    vc = VirtualCluster.objects.get(name="vision")
    assert (vc.queue_policy, vc.backfill, vc.user_gpu_limit, vc.max_run_minutes) == ("fair-share", False, 4, 600)
    assert (vc.default_priority_class, vc.lends_idle_quota, vc.lending_limit_percent) == ("prod", True, 50)
    assert list(vc.allowed_users.all()) == [user] and list(vc.allowed_groups.all()) == [vision]
    assert AuditEntry.objects.filter(action="vc.create", target="vision", actor_name="root").exists()


def test_a_share_that_takes_the_total_over_100_percent_is_refused_before_saving_in_its_field(root_client, research):
    answer = root_client.post("/cluster/new-vc/", {**FORM, "name": "more", "share_percent": "10"})
    page = answer.content.decode()
    assert answer.status_code == 400
    assert 'data-field-error="share_percent"' in page and "would add up to 110% (more than 100%)" in page
    assert not VirtualCluster.objects.filter(name="more").exists()


def test_raising_a_vcs_share_past_the_room_left_is_refused_and_it_keeps_its_share(root_client, research):
    answer = root_client.post("/cluster/vcs/research/edit/", {**FORM, "share_percent": "50"})
    assert answer.status_code == 400
    assert "would add up to 110% (more than 100%)" in answer.content.decode()
    research.refresh_from_db()
    assert research.share_percent == 40


def test_the_form_says_the_room_left_for_the_share_before_anything_is_sent(root_client, research):
    page = root_client.get("/cluster/vcs/research/edit/").content.decode()
    assert "The other VCs' shares add up to 60%: up to 40% is left for this one." in page


def test_a_default_time_limit_longer_than_the_longest_is_refused_as_in_the_admin(root_client, research):
    form = {**FORM, "share_percent": "40", "default_run_minutes": "90", "max_run_minutes": "60"}
    answer = root_client.post("/cluster/vcs/research/edit/", form)
    assert answer.status_code == 400
    assert 'data-field-error="default_run_minutes"' in answer.content.decode()


def test_an_unknown_user_is_refused_by_name_and_nothing_is_saved(root_client, research, user):
    answer = root_client.post(
        "/cluster/vcs/research/edit/", {**FORM, "share_percent": "30", "allowed_users": "alice, zoe"}
    )
    assert answer.status_code == 400
    assert "unknown users: zoe" in answer.content.decode()
    research.refresh_from_db()
    assert research.share_percent == 40 and not research.allowed_users.exists()


def test_an_admin_changes_a_vcs_share_and_users_and_its_name_stays(root_client, research, user):
    form = {**FORM, "name": "renamed", "share_percent": "30", "allowed_users": "alice", "crit_users": "alice"}
    answer = root_client.post("/cluster/vcs/research/edit/", form)
    assert answer.status_code == 302
    research.refresh_from_db()
    assert (research.name, research.share_percent) == ("research", 30)
    assert list(research.crit_users.all()) == [user]


def test_removing_a_vc_with_a_waiting_job_is_refused_and_says_why_before_and_after_the_click(
    root_client, research, make_job, user
):
    make_job(user, "queued", virtual_cluster=research)
    question = root_client.get("/cluster/vcs/research/remove/").content.decode()
    assert "1 job names VC research" in question and "data-confirm-remove" not in question
    answer = root_client.post("/cluster/vcs/research/remove/")
    assert answer.status_code == 409
    assert "set its share to 0" in answer.content.decode()
    assert VirtualCluster.objects.filter(name="research").exists()


def test_removing_a_vc_no_job_names_asks_first_then_removes_it(root_client, research):
    assert "data-confirm-remove" in root_client.get("/cluster/vcs/research/remove/").content.decode()
    answer = root_client.post("/cluster/vcs/research/remove/")
    assert answer.status_code == 302 and answer["Location"] == "/cluster/vcs/"
    assert not VirtualCluster.objects.filter(name="research").exists()
    assert AuditEntry.objects.filter(action="vc.delete", target="research").exists()


def test_the_default_vc_is_never_removed(root_client, research):
    answer = root_client.post("/cluster/vcs/default/remove/")
    assert answer.status_code == 409
    assert "takes the jobs that name no VC" in answer.content.decode()


def test_a_form_sent_without_its_csrf_token_is_refused(admin_user, research):
    client = Client(enforce_csrf_checks=True)
    client.force_login(admin_user)
    assert client.post("/cluster/vcs/research/remove/").status_code == 403
    assert VirtualCluster.objects.filter(name="research").exists()


def test_a_vcs_page_shows_its_jobs_and_who_may_use_it(root_client, research, make_job, user, other_user):
    ml = Group.objects.create(name="ml")
    other_user.groups.add(ml)
    research.allowed_users.set([user])
    research.allowed_groups.set([ml])
    make_job(user, "training", state="RUNNING", virtual_cluster=research)
    make_job(user, "queued", virtual_cluster=research)
    make_job(user, "done", state="SUCCEEDED", virtual_cluster=research)
    page = root_client.get("/cluster/vcs/research/").content.decode()
    assert 'data-vc-job="alice~training"' in page and 'data-vc-job="alice~queued"' in page
    assert "alice~done" not in page
    assert "1 running, 1 waiting" in page
    assert 'href="/people/users/alice/"' in page and 'href="/people/groups/ml/"' in page and "1 member" in page


def test_an_unknown_vc_is_a_404(root_client):
    assert root_client.get("/cluster/vcs/nope/").status_code == 404


def test_a_vc_whose_name_holds_a_slash_has_its_pages(root_client, default_vc):
    """`createvc` and the admin take any name: the list links it and its pages answer."""
    VirtualCluster.objects.create(name="team/a", share_percent=0)
    assert 'href="/cluster/vcs/team/a/"' in root_client.get("/cluster/vcs/").content.decode()
    for path in ("/cluster/vcs/team/a/", "/cluster/vcs/team/a/edit/", "/cluster/vcs/team/a/remove/"):
        assert root_client.get(path).status_code == 200, path
