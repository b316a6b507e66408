"""The job list page (`/`) and its live-update endpoint."""

import pytest

from clusters.models import VirtualCluster
from jobs.models import Job

pytestmark = pytest.mark.django_db


def test_it_requires_login(client):
    response = client.get("/")
    assert response.status_code == 302
    assert response["Location"].startswith("/login/")


def test_it_lists_everyones_jobs_with_their_owner_on_a_shared_list(alice_client, user, other_user, make_job):
    make_job(other_user, "bob-job")
    page = alice_client.get("/").content.decode()
    assert "bob-job" in page
    assert ">User</a></th>" in page
    assert "bob-job" in alice_client.get("/?user=bob").content.decode()
    assert "bob-job" not in alice_client.get("/?user=alice").content.decode()


@pytest.mark.usefixtures("private_job_list")
def test_it_lists_only_the_users_own_jobs_when_the_list_is_private(alice_client, user, other_user, make_job):
    make_job(user, "alice-job")
    make_job(other_user, "bob-job")
    page = alice_client.get("/").content.decode()
    assert "alice-job" in page
    assert "bob-job" not in page


def test_it_lists_everyones_jobs_for_an_admin_with_a_user_filter(admin_client, user, other_user, make_job):
    make_job(user, "alice-job")
    make_job(other_user, "bob-job")
    assert "bob-job" in admin_client.get("/").content.decode()
    filtered = admin_client.get("/?user=alice").content.decode()
    assert "alice-job" in filtered
    assert "bob-job" not in filtered


@pytest.mark.usefixtures("private_job_list")
def test_it_ignores_the_user_filter_for_non_admins_when_the_list_is_private(alice_client, user, other_user, make_job):
    make_job(other_user, "bob-job")
    assert "bob-job" not in alice_client.get("/?user=bob").content.decode()


def test_it_filters_by_state(alice_client, user, make_job):
    make_job(user, "running-one", state="RUNNING")
    make_job(user, "waiting-one", state="WAITING")
    page = alice_client.get("/?state=RUNNING").content.decode()
    assert "running-one" in page
    assert "waiting-one" not in page


def test_it_filters_by_virtual_cluster(alice_client, user, make_job):
    research = VirtualCluster.objects.create(name="research", share_percent=50)
    make_job(user, "in-research", virtual_cluster=research)
    make_job(user, "in-default")
    page = alice_client.get("/?vc=research").content.decode()
    assert "in-research" in page
    assert "in-default" not in page


def test_it_filters_by_priority_class(alice_client, user, make_job):
    make_job(user, "urgent-one", priority_class="prod", priority=100)
    make_job(user, "plain-one")
    page = alice_client.get("/?priority=prod").content.decode()
    assert "urgent-one" in page
    assert "plain-one" not in page
    assert '<option value="prod" selected>' in page


def test_it_searches_by_name(alice_client, user, make_job):
    make_job(user, "resnet-50")
    make_job(user, "bert-large")
    page = alice_client.get("/?q=RESNET").content.decode()
    assert "resnet-50" in page
    assert "bert-large" not in page


def test_it_sorts_by_name(alice_client, user, make_job):
    for name in ("b-job", "c-job", "a-job"):
        make_job(user, name)
    names = [job.name for job in alice_client.get("/?sort=name").context["page"].jobs]
    assert names == ["a-job", "b-job", "c-job"]


def test_it_counts_jobs_per_state(alice_client, user, make_job):
    make_job(user, "r1", state="RUNNING")
    make_job(user, "r2", state="RUNNING")
    make_job(user, "s1", state="SUCCEEDED")
    query = alice_client.get("/").context["query"]
    counts = {state: count for state, count, _qs, _selected in query.state_links()}
    assert counts[""] == 3
    assert counts["RUNNING"] == 2
    assert counts["SUCCEEDED"] == 1
    assert counts["FAILED"] == 0


def test_it_pages_through_the_jobs(alice_client, user, make_job):
    for number in range(25):
        make_job(user, f"job-{number:02d}")
    first = alice_client.get("/").context["page"]
    second = alice_client.get("/?page=2").context["page"]
    assert (len(first.jobs), len(second.jobs), first.total) == (20, 5, 25)
    assert not {job.pk for job in first.jobs} & {job.pk for job in second.jobs}


def test_its_query_count_does_not_grow_with_the_page_size(alice_client, user, make_job, django_assert_max_num_queries):
    for number in range(60):
        make_job(user, f"job-{number:02d}", state="RUNNING" if number % 2 else "WAITING")
    with django_assert_max_num_queries(6):
        small = alice_client.get("/?size=20")
    with django_assert_max_num_queries(6):
        large = alice_client.get("/?size=50")
    assert len(small.context["page"].jobs) == 20
    assert len(large.context["page"].jobs) == 50


def test_it_shows_a_markup_name_as_text(alice_client, user, make_job):
    make_job(user, "x<img src=x onerror=alert(1)>")
    page = alice_client.get("/").content.decode()
    assert "<img src=x onerror=alert(1)>" not in page
    assert "x&lt;img src=x onerror=alert(1)&gt;" in page


@pytest.mark.usefixtures("private_job_list")
def test_its_live_endpoint_answers_the_states_of_the_listed_jobs(alice_client, user, other_user, make_job):
    mine = make_job(user, "mine", state="RUNNING")
    theirs = make_job(other_user, "theirs", state="RUNNING")
    data = alice_client.get(f"/jobs/states.json?ids={mine.pk},{theirs.pk}").json()
    assert data["states"] == {str(mine.pk): "RUNNING"}
    assert data["counts"] == {"RUNNING": 1}
    assert data["labels"]["RUNNING"] == "Running"


def test_its_live_endpoint_keeps_the_lists_filters(alice_client, user, make_job):
    make_job(user, "a", state="RUNNING")
    make_job(user, "b", state="RUNNING")
    data = alice_client.get("/jobs/states.json?q=a&ids=").json()
    assert data["counts"] == {"RUNNING": 1}


def test_it_has_the_indexes_the_list_relies_on():
    names = {index.name for index in Job._meta.indexes}
    assert {"job_owner_created", "job_vc_state"} <= names


def test_it_reverses_the_sort_when_the_sorted_column_is_clicked_again(alice_client, user, make_job):
    query = alice_client.get("/?sort=name").context["query"]
    assert "sort=-name" in query.sort_links()["name"]
    assert "sort=name" in alice_client.get("/?sort=-name").context["query"].sort_links()["name"]


def test_its_rows_link_to_the_same_address_reverse_gives(alice_client, user, make_job):
    from django.urls import reverse

    job = make_job(user, "a~b.c_d-e")
    page = alice_client.get("/").content.decode()
    assert f'href="{reverse("jobs:detail", args=[job.full_name])}"' in page
