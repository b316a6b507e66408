"""`GET /api/v2/jobs`: filters (comma lists), keyword, order, offset/limit, withTotalCount, the cap."""

import pytest

from jobs.models import Job, JobState
from tests.api.answers import openpai
from tests.api.conftest import bearer_client
from tests.conftest import rows_for_module
from tests.factories import create_user, v2_yaml
from web.api.views.common import ORDER_FIELDS

pytestmark = pytest.mark.django_db


@pytest.fixture(scope="module")
def listed(django_db_setup, django_db_blocker):
    """alice's alpha, beta (running) and gamma (failed), then bob's bobs-job, submitted through the
    API once for the module (`rows_for_module`): its tests list and read them, and what one changes
    its own transaction undoes. (Tests that need a list of other jobs are in test_job_list_order.py.)"""

    def make():
        alice, bob = create_user("alice"), create_user("bob")
        for owner, name in ((alice, "alpha"), (alice, "beta"), (alice, "gamma"), (bob, "bobs-job")):
            response = bearer_client(owner).post("/api/v2/jobs", data=v2_yaml(name), content_type="text/yaml")
            assert response.status_code == 202, response.content
        Job.objects.filter(name="beta").update(state=JobState.RUNNING)
        Job.objects.filter(name="gamma").update(state=JobState.FAILED)
        return alice, bob

    yield from rows_for_module(django_db_blocker, make)


@pytest.fixture
def user(listed):
    return listed[0]


@pytest.fixture
def other_user(listed):
    return listed[1]


@pytest.fixture
def three_jobs(listed):
    return listed


def names(response):
    data = response.json()
    return [job["name"] for job in (data["data"] if isinstance(data, dict) else data)]


def test_it_lists_everyones_jobs_newest_first_on_a_shared_list(alice, three_jobs):
    response = alice.get("/api/v2/jobs")
    assert response.status_code == 200
    assert names(response) == ["bobs-job", "gamma", "beta", "alpha"]


@pytest.mark.usefixtures("private_job_list")
def test_it_lists_only_the_callers_jobs_when_the_list_is_private(alice, three_jobs):
    assert names(alice.get("/api/v2/jobs")) == ["gamma", "beta", "alpha"]


def test_it_filters_another_users_jobs_by_username(alice, three_jobs):
    assert names(alice.get("/api/v2/jobs?username=bob")) == ["bobs-job"]


def test_it_lists_everyones_jobs_for_an_admin(root, three_jobs):
    assert len(names(root.get("/api/v2/jobs"))) == 4


def test_it_filters_by_a_comma_list_of_states(alice, three_jobs):
    assert sorted(names(alice.get("/api/v2/jobs?state=RUNNING,FAILED"))) == ["beta", "gamma"]


def test_it_filters_by_username_and_vc(root, three_jobs):
    assert names(root.get("/api/v2/jobs?username=bob&vc=default")) == ["bobs-job"]


def test_it_filters_by_keyword(alice, three_jobs):
    assert names(alice.get("/api/v2/jobs?keyword=amm")) == ["gamma"]


def test_it_orders_by_a_field_ascending(alice, three_jobs):
    assert names(alice.get("/api/v2/jobs?username=alice&order=jobName,ASC")) == ["alpha", "beta", "gamma"]


@pytest.mark.parametrize(
    "field",
    [
        "jobName",
        "submissionTime",
        "username",
        "vc",
        "retries",
        "totalTaskNumber",
        "totalGpuNumber",
        "state",
        "completionTime",
        "jobPriority",
    ],
)
def test_it_accepts_every_order_field_openpai_does(alice, three_jobs, field):
    for direction in ("ASC", "DESC"):
        response = alice.get(f"/api/v2/jobs?order={field},{direction}")
        assert response.status_code == 200, response.json()
        assert len(response.json()) == 4


def test_it_refuses_an_unknown_order_field_naming_the_known_ones(alice):
    response = alice.get("/api/v2/jobs?order=gpus,DESC")
    assert response.status_code == 400
    assert response.json()["errors"][0] | {"message": ""} == {
        "field": "order",
        "code": "api.query.order_field",
        "params": {"field": "gpus", "fields": list(ORDER_FIELDS)},
        "message": "",
    }
    assert openpai(response.json()) == {
        "code": "InvalidParametersError",
        "message": "order: unknown field 'gpus' (one of jobName, submissionTime, username, vc, retries, "
        "totalTaskNumber, totalGpuNumber, state, completionTime, jobPriority).",
    }


def test_it_refuses_an_unknown_order_direction(alice):
    response = alice.get("/api/v2/jobs?order=jobName,DOWN")
    assert response.status_code == 400
    assert response.json()["message"] == "order: the direction must be ASC or DESC, not 'DOWN'."


def test_it_pages_with_offset_and_limit(alice, three_jobs):
    assert names(alice.get("/api/v2/jobs?order=jobName,ASC&offset=1&limit=1")) == ["beta"]


def test_it_answers_total_count_with_the_page(alice, three_jobs):
    body = alice.get("/api/v2/jobs?username=alice&limit=1&withTotalCount=true").json()
    assert body["totalCount"] == 3
    assert len(body["data"]) == 1


def test_it_refuses_a_limit_above_the_cap(alice):
    response = alice.get("/api/v2/jobs?limit=50001")
    assert response.status_code == 400
    assert response.json()["code"] == "InvalidParametersError"


def test_it_refuses_a_non_numeric_offset(alice):
    response = alice.get("/api/v2/jobs?offset=abc")
    assert response.status_code == 400
    assert response.json()["code"] == "InvalidParametersError"


def test_it_refuses_an_unknown_state(alice):
    response = alice.get("/api/v2/jobs?state=SLEEPING")
    assert response.status_code == 400
    assert response.json()["code"] == "InvalidParametersError"


def test_it_gives_each_item_openpais_keys(alice, three_jobs):
    (item, *_) = alice.get("/api/v2/jobs").json()
    assert {
        "name",
        "username",
        "state",
        "subState",
        "executionType",
        "retries",
        "retryDetails",
        "createdTime",
        "completedTime",
        "appExitCode",
        "virtualCluster",
        "totalGpuNumber",
        "totalTaskNumber",
    } <= set(item)
    assert isinstance(item["createdTime"], int)


def test_it_lists_with_a_constant_number_of_queries(alice, three_jobs, django_assert_max_num_queries):
    # The token, the page, its tags, the total, and the specs of jobs this process has not listed
    # yet; the throttle's counter is no query (settings.CACHES["throttles"]).
    with django_assert_max_num_queries(5):
        alice.get("/api/v2/jobs?withTotalCount=true")


def test_it_gives_the_same_times_in_the_list_as_in_the_detail_to_the_millisecond(alice, three_jobs):
    from datetime import UTC, datetime

    launched = datetime(2026, 11, 26, 3, 4, 5, 678999, tzinfo=UTC)
    Job.objects.filter(name="beta").update(launched_at=launched, completed_at=launched.replace(microsecond=0))
    item = next(job for job in alice.get("/api/v2/jobs").json() if job["name"] == "beta")
    detail = alice.get("/api/v2/jobs/alice~beta").json()["jobStatus"]
    assert (item["launchedTime"], item["completedTime"]) == (1795662245678, 1795662245000)
    assert item["createdTime"] == detail["createdTime"]
    assert item["launchedTime"] == detail["launchedTime"]


def test_it_says_stop_as_the_execution_type_of_a_job_asked_to_stop(alice, three_jobs):
    Job.objects.filter(name="beta").update(state=JobState.STOPPING, ending_cause=Job.Ending.STOP)
    types = {job["name"]: job["executionType"] for job in alice.get("/api/v2/jobs").json()}
    assert (types["beta"], types["alpha"]) == ("STOP", "START")
    assert alice.get("/api/v2/jobs/alice~beta").json()["jobStatus"]["executionType"] == "STOP"


POLLED_ORDERS = [None, *(f"{field},{direction}" for field in ORDER_FIELDS for direction in ("ASC", "DESC")), "vc"]


@pytest.mark.parametrize("private", [False, True])
def test_a_polled_list_compiled_once_answers_as_the_filtered_list_does(
    alice, bob, admin_user, three_jobs, settings, monkeypatch, private
):
    """A list without filters reads its page and tags by SQL compiled once per order and page
    (common._page_reads): the same bytes, for its owner, another user and an admin, every order."""
    from jobs.models import JobTag
    from tests.api.conftest import bearer_client
    from web.api.views import common

    settings.PAI_SHARED_JOB_LIST = not private
    for job in Job.objects.all():
        JobTag.objects.create(job=job, name=f"t-{job.name}")
    JobTag.objects.create(job=Job.objects.get(name="beta"), name="second")
    admin = bearer_client(admin_user)
    paths = [f"/api/v2/jobs?order={order}" if order else "/api/v2/jobs" for order in POLLED_ORDERS]
    paths += [
        "/api/v2/jobs?limit=2&offset=1&withTotalCount=true",
        "/api/v2/jobs?limit=1&offset=9",
        "/api/v2/jobs?limit=0",
    ]
    polled = {
        (name, path): client.get(path).content
        for name, client in [("alice", alice), ("bob", bob), ("admin", admin)]
        for path in paths
    }
    monkeypatch.setattr(common, "_is_poll", lambda params, order: False)
    for (name, path), content in polled.items():
        client = {"alice": alice, "bob": bob, "admin": admin}[name]
        assert content == client.get(path).content, (name, path)
    assert b"second" in polled["alice", "/api/v2/jobs"]
    assert (b"bobs-job" in polled["alice", "/api/v2/jobs"]) is not private


def test_listed_owner_says_whose_jobs_listed_jobs_gives(user, other_user, admin_user, settings):
    from jobs.actions import listed_jobs, listed_owner
    from tests.factories import create_job

    create_job(user, "alices")
    create_job(other_user, "bobs")
    for shared in (True, False):
        settings.PAI_SHARED_JOB_LIST = shared
        for someone in (user, other_user, admin_user):
            owner = listed_owner(someone)
            assert owner in (None, someone.pk)
            expected = Job.objects.all() if owner is None else Job.objects.filter(owner_id=owner)
            assert set(listed_jobs(someone)) == set(expected), (shared, someone.username)
