"""`GET /api/v2/jobs?order=`: the orders that need a list of their own jobs (test_job_list.py's
module shares one list of four jobs between its tests)."""

import pytest

from tests.factories import v2_yaml

pytestmark = pytest.mark.django_db


def names(response):
    return [job["name"] for job in response.json()]


@pytest.fixture
def gpu_jobs(submit_yaml):
    for name, gpus in (("two", 2), ("none", 0), ("four", 4)):
        submit_yaml(v2_yaml(name).replace("gpu: 0", f"gpu: {gpus}"))


@pytest.mark.parametrize(
    ("order", "expected"),
    [
        ("totalGpuNumber,DESC", ["four", "two", "none"]),
        ("totalGpuNumber,ASC", ["none", "two", "four"]),
        ("totalGpuNumber", ["none", "two", "four"]),
    ],
)
def test_it_orders_by_total_gpu_number(alice, gpu_jobs, order, expected):
    response = alice.get(f"/rest-server/api/v2/jobs?order={order}")
    assert names(response) == expected
    assert [job["totalGpuNumber"] for job in response.json()] == sorted(
        (job["totalGpuNumber"] for job in response.json()), reverse=order.endswith("DESC")
    )


def test_it_orders_by_total_task_number(alice, submit_yaml):
    submit_yaml(v2_yaml("three", instances=3))
    submit_yaml(v2_yaml("one"))
    assert names(alice.get("/api/v2/jobs?order=totalTaskNumber,DESC")) == ["three", "one"]
