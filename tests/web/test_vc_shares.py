"""VC shares on a small cluster and `createvc` (issue 36): 60 % and 40 % of 2 CPUs are one CPU
each; a share that comes to nothing is warned of; createvc changes nothing when it fails."""

import io

import pytest
from django.core.management import CommandError, call_command

from clusters.models import Node, VirtualCluster
from scheduling.quota import cluster_usage

pytestmark = pytest.mark.django_db


@pytest.fixture
def two_cpus(default_vc) -> Node:
    return Node.objects.create(name="small", address="10.0.0.8", cpus=2, memory_mb=4096)


def test_it_gives_research_at_40_percent_of_two_cpus_one_cpu(two_cpus, default_vc):
    default_vc.share_percent = 60
    default_vc.save()
    VirtualCluster.objects.create(name="research", share_percent=40)
    vcs = cluster_usage(list(Node.objects.all())).vcs
    assert (vcs["default"].limit.cpu, vcs["research"].limit.cpu) == (1, 1)


@pytest.fixture
def starved(two_cpus, default_vc) -> VirtualCluster:
    """Three VCs of about a third of 2 CPUs: one of them gets none."""
    default_vc.share_percent = 34
    default_vc.save()
    VirtualCluster.objects.create(name="b", share_percent=33)
    return VirtualCluster.objects.create(name="c", share_percent=33)


def test_it_warns_on_the_cluster_page_of_a_vc_whose_share_is_no_cpu(alice_client, starved):
    page = alice_client.get("/cluster/").content.decode()
    assert "The share of VC c (33%) gives it none of the cluster&#x27;s 2 CPUs" in page


def test_it_warns_in_the_admin_vc_list_of_a_vc_whose_share_is_no_cpu(admin_client, starved):
    page = admin_client.get("/admin/clusters/virtualcluster/").content.decode()
    assert "The share of VC c (33%) gives it none of the cluster&#x27;s 2 CPUs" in page


def test_createvc_warns_of_a_vc_whose_share_is_no_cpu(two_cpus, default_vc):
    call_command("createvc", "default", "--share", "34", stdout=io.StringIO())
    call_command("createvc", "b", "--share", "33", stdout=io.StringIO())
    err = io.StringIO()
    call_command("createvc", "c", "--share", "33", stdout=io.StringIO(), stderr=err)
    assert "warning: The share of VC c (33%) gives it none of the cluster's 2 CPUs" in err.getvalue()


def test_createvc_with_an_unknown_user_creates_no_vc(default_vc, user):
    with pytest.raises(CommandError, match=r"--users: unknown user\(s\): bob\. Nothing was changed"):
        call_command("createvc", "research", "--share", "40", "--users", "alice,bob", stdout=io.StringIO())
    assert not VirtualCluster.objects.filter(name="research").exists()


def test_createvc_with_an_unknown_user_leaves_an_existing_vc_as_it_was(default_vc, user):
    default_vc.allowed_users.set([user])
    with pytest.raises(CommandError):
        call_command("createvc", "default", "--share", "10", "--users", "bob", stdout=io.StringIO())
    default_vc.refresh_from_db()
    assert default_vc.share_percent == 100
    assert list(default_vc.allowed_users.all()) == [user]


VC_FORM = {"description": "", "queue_policy": "fifo", "slurm_partition": ""}


def test_the_admin_form_refuses_a_vc_that_takes_the_shares_over_100_percent(admin_client, default_vc):
    page = admin_client.post("/admin/clusters/virtualcluster/add/", {**VC_FORM, "name": "r", "share_percent": "40"})
    assert "would add up to 140% (more than 100%)" in page.content.decode()
    assert not VirtualCluster.objects.filter(name="r").exists()


def test_the_admin_form_saves_a_change_that_lowers_shares_still_over_100_percent(admin_client, default_vc):
    research = VirtualCluster.objects.create(name="research", share_percent=40)
    form = {**VC_FORM, "name": "research", "share_percent": "20"}
    response = admin_client.post(f"/admin/clusters/virtualcluster/{research.pk}/change/", form)
    assert response.status_code == 302
    research.refresh_from_db()
    assert research.share_percent == 20


def test_it_says_on_the_cluster_page_and_in_the_admin_when_shares_add_up_to_over_100(
    alice_client, admin_client, default_vc
):
    VirtualCluster.objects.create(name="research", share_percent=40)
    said = "The VCs&#x27; shares add up to 140%, more than the whole cluster"
    assert said in alice_client.get("/cluster/").content.decode()
    assert said in admin_client.get("/admin/clusters/virtualcluster/").content.decode()


def test_createvc_warns_of_shares_over_100_percent_as_the_pages_do(default_vc):
    err = io.StringIO()
    call_command("createvc", "research", "--share", "40", stdout=io.StringIO(), stderr=err)
    assert "warning: The VCs' shares add up to 140%, more than the whole cluster" in err.getvalue()


def test_the_cluster_page_counts_one_cpu_in_the_singular(alice_client, default_vc):
    """Issue 50: "0 GPUs, 1 CPUs" on the cluster page."""
    Node.objects.create(name="tiny", address="10.0.0.9", cpus=1, memory_mb=2048)
    page = alice_client.get("/cluster/").content.decode()
    assert "0 GPUs, 1 CPU, 2048 MB memory on schedulable nodes" in page
