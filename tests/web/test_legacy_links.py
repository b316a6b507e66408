"""OpenPAI webportal links (printed by its SDK, kept in notes and mails) lead to the portal's pages."""

import pytest

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize(
    ("old", "new"),
    [
        ("/job-detail.html?username=alice&jobName=mnist", "/jobs/alice~mnist/"),
        ("/job-detail.html?jobName=alice~mnist", "/jobs/alice~mnist/"),
        (
            "/task-attempt.html?username=alice&jobName=mnist&jobAttemptIndex=0&taskRoleName=w&taskIndex=0",
            "/jobs/alice~mnist/",
        ),
        ("/job-event.html?userName=alice&jobName=mnist", "/jobs/alice~mnist/"),
        ("/job-list.html", "/"),
        (
            "/job-list.html?vcName=default&status=Running&user=alice&keyword=mn",
            "/?vc=default&state=RUNNING&user=alice&q=mn",
        ),
        ("/submit.html", "/submit/"),
        ("/submit.html?op=resubmit&type=job&user=alice&jobName=mnist", "/submit/?clone=alice~mnist"),
        ("/submit_v1.html", "/submit/"),
        ("/index.html", "/"),
        ("/home.html", "/"),
        ("/virtual-clusters.html?vcName=default", "/cluster/"),
        ("/cluster-view/hardware.html", "/cluster/"),
        ("/user-profile.html", "/profile/"),
    ],
)
def test_it_redirects_an_openpai_webportal_link(alice_client, old, new):
    response = alice_client.get(old)
    assert response.status_code == 301
    assert response["Location"] == new


def test_it_sends_a_signed_out_visitor_to_sign_in_first_then_to_the_page(client):
    response = client.get("/job-detail.html?username=alice&jobName=mnist")
    assert response.status_code == 302
    assert response["Location"] == "/login/?next=/job-detail.html%3Fusername%3Dalice%26jobName%3Dmnist"


def test_a_job_link_without_a_job_name_leads_to_the_job_list(alice_client):
    assert alice_client.get("/job-detail.html?username=alice")["Location"] == "/"


def test_it_ignores_an_unknown_status(alice_client):
    assert alice_client.get("/job-list.html?status=Bogus")["Location"] == "/"
