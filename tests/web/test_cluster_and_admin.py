"""The cluster page and the Django admin's job pages."""

import pytest

from clusters.models import Gpu, GpuType, Node, VirtualCluster
from jobs.models import Job

pytestmark = pytest.mark.django_db


@pytest.fixture
def gpu_node(db) -> Node:
    p100 = GpuType.objects.create(name="P100", description="NVIDIA Tesla P100")
    node = Node.objects.create(name="gpu-node-1", address="10.0.0.7", cpus=16, memory_mb=65536)
    for index in range(4):
        Gpu.objects.create(node=node, index=index, gpu_type=p100)
    return node


def test_it_shows_virtual_clusters_with_quota_and_usage(alice_client, user, make_job, gpu_node):
    VirtualCluster.objects.filter(name="default").update(share_percent=50)
    job = make_job(user, "busy", state="RUNNING")
    job.tasks.update(state="RUNNING", node=gpu_node, gpus=[1])
    row = alice_client.get("/cluster/").context["vc_rows"][0]
    assert (row.vc.name, row.quota.gpu, row.used.gpu, row.running_jobs) == ("default", 2, 1, 1)
    assert row.used.cpu == 1


def test_it_shows_a_borrowed_jobs_use_in_its_lenders_row_and_the_lender_marked(alice_client, user, make_job, gpu_node):
    VirtualCluster.objects.filter(name="default").update(share_percent=50)
    lender = VirtualCluster.objects.create(name="lender", share_percent=50, lends_idle_quota=True)
    job = make_job(user, "guest", state="RUNNING")
    Job.objects.filter(pk=job.pk).update(borrowed_from=lender)
    job.tasks.update(state="RUNNING", node=gpu_node, gpus=[1])
    page = alice_client.get("/cluster/")
    rows = {row.vc.name: row for row in page.context["vc_rows"]}
    assert (rows["default"].used.gpu, rows["lender"].used.gpu) == (0, 1)
    assert (rows["default"].lends, rows["lender"].lends) == (False, True)
    assert page.content.decode().count("data-vc-lends") == 1


def test_it_shows_what_each_vc_lent_and_borrowed_and_its_limits(alice_client, user, make_job, gpu_node):
    VirtualCluster.objects.filter(name="default").update(share_percent=50, borrowing_limit_percent=25)
    lender = VirtualCluster.objects.create(
        name="lender", share_percent=50, lends_idle_quota=True, lending_limit_percent=50
    )
    job = make_job(user, "guest", state="RUNNING")
    Job.objects.filter(pk=job.pk).update(borrowed_from=lender)
    job.tasks.update(state="RUNNING", node=gpu_node, gpus=[1])
    page = alice_client.get("/cluster/")
    rows = {row.vc.name: row for row in page.context["vc_rows"]}
    assert (rows["lender"].lent.gpu, rows["default"].borrowed.gpu) == (1, 1)
    text = page.content.decode()
    assert "lent: 1 GPU, 1 CPU" in text and "borrowed: 1 GPU, 1 CPU" in text
    assert "at most 50% of it" in text and "borrows at most 25% of its quota" in text


def test_it_shows_each_nodes_gpus_free_or_used(alice_client, user, make_job, gpu_node):
    job = make_job(user, "busy", state="RUNNING")
    job.tasks.update(state="RUNNING", node=gpu_node, gpus=[2])
    response = alice_client.get("/cluster/")
    [node_row] = response.context["node_rows"]
    assert node_row.free_gpus == 3
    assert [gpu["used"] for gpu in node_row.gpus] == [False, False, True, False]
    assert response.context["gpu_types"][0]["free"] == 3
    assert "NVIDIA Tesla P100" in response.content.decode()


def test_the_admin_lists_jobs_with_filters(admin_client, user, make_job):
    make_job(user, "listed", state="RUNNING")
    page = admin_client.get("/admin/jobs/job/?state__exact=RUNNING").content.decode()
    assert "listed" in page


def test_the_admin_stops_selected_jobs(admin_client, user, make_job):
    running = make_job(user, "running", state="RUNNING")
    done = make_job(user, "done", state="SUCCEEDED")
    admin_client.post("/admin/jobs/job/", {"action": "stop_selected_jobs", "_selected_action": [running.pk, done.pk]})
    assert Job.objects.get(pk=running.pk).execution_type == "STOP"
    assert Job.objects.get(pk=done.pk).execution_type == "START"


def test_the_admin_never_shows_secrets(admin_client, user, make_job):
    job = make_job(user, "secretive", secrets_encrypted="gAAAA-encrypted-blob")
    page = admin_client.get(f"/admin/jobs/job/{job.pk}/change/").content.decode()
    assert "gAAAA-encrypted-blob" not in page
    assert "s3cr3t-value" not in page
    assert "******" in page


def test_the_admin_deletes_only_finished_jobs(admin_client, user, make_job):
    running = make_job(user, "running", state="RUNNING")
    done = make_job(user, "done", state="SUCCEEDED")
    assert admin_client.get(f"/admin/jobs/job/{running.pk}/delete/").status_code == 403
    assert admin_client.get(f"/admin/jobs/job/{done.pk}/delete/").status_code == 200
