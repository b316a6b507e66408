"""A job's training metrics as the API, the job page's plot data and the CSV answer them."""

import pytest
from django.test import Client
from rest_framework.test import APIClient

from jobs.models import MetricPoint, MetricSource, Task
from tests.api.conftest import bearer_client
from tests.conftest import rows_for_module
from tests.factories import create_job, create_user

pytestmark = pytest.mark.django_db


@pytest.fixture(scope="module")
def alice_and_job(django_db_setup, django_db_blocker):
    """alice's job: a worker that reported loss at steps 0..2999 and acc at step 10, a bad line;
    written once for the module's tests, which read it (`rows_for_module`: 3,000 points per test
    were most of the file's CPU)."""

    def make():
        alice = create_user("alice")
        job = create_job(alice, "train", roles={"worker": 1})
        task = Task.objects.get(job=job)
        MetricPoint.objects.bulk_create(
            [
                MetricPoint(job=job, task=task, name="loss", step=step, value=1 / (step + 1), at=0)
                for step in range(3000)
            ]
            + [MetricPoint(job=job, task=task, name="acc", step=10, value=0.5, at=0)]
        )
        MetricSource.objects.create(task=task, kind="log", path="x", bad_lines=1)
        return alice, job

    yield from rows_for_module(django_db_blocker, make)


@pytest.fixture
def user(alice_and_job):
    return alice_and_job[0]


@pytest.fixture
def job(alice_and_job):
    return alice_and_job[1]


@pytest.fixture
def api(user) -> APIClient:
    return bearer_client(user)


@pytest.fixture
def browser(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


def test_it_answers_every_point_of_each_series_in_the_api(api, job):
    answer = api.get(f"/api/v2/jobs/{job.full_name}/metrics").json()

    loss = next(series for series in answer["series"] if series["name"] == "loss")
    assert (loss["task"], len(loss["steps"]), loss["values"][1]) == ("worker-0", 3000, 0.5)
    assert (answer["points"], answer["badLines"], answer["names"]) == (3001, 1, [])


def test_it_answers_one_metric_downsampled_when_asked(api, job):
    answer = api.get(f"/api/v2/jobs/{job.full_name}/metrics", {"name": "loss", "maxPoints": 100}).json()

    assert [series["name"] for series in answer["series"]] == ["loss"]
    assert len(answer["series"][0]["steps"]) <= 100


def test_it_refuses_a_max_points_that_is_not_a_number(api, job):
    assert api.get(f"/api/v2/jobs/{job.full_name}/metrics", {"maxPoints": "lots"}).status_code == 400


def test_it_describes_the_metrics_route_in_the_openapi_schema(api):
    schema = api.get("/api/schema/", {"format": "json"}).json()

    assert "JobMetrics" in schema["components"]["schemas"]


def test_it_downsamples_the_job_pages_plot_data(browser, job):
    answer = browser.get(f"/jobs/{job.full_name}/metrics.json").json()

    assert max(len(series["steps"]) for series in answer["series"]) <= 1000


def test_it_downloads_every_point_as_csv(browser, job):
    response = browser.get(f"/jobs/{job.full_name}/metrics.csv")

    lines = b"".join(response.streaming_content).decode().splitlines()
    assert (lines[1], len(lines)) == ("worker-0,acc,10,0.5,0", 3002)


def test_it_shows_the_metrics_section_on_the_job_page(browser, job):
    page = browser.get(f"/jobs/{job.full_name}/").content.decode()

    assert 'id="metrics"' in page and f"/jobs/{job.full_name}/metrics.json" in page
