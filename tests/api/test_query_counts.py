"""The API's busiest requests take a fixed number of queries (issue 49): a job's detail (clients
poll it), the job list, a submit. Each count is what the request needs, named beside it: a query
added on these paths shows here. Each is counted on a request after a first one: the first of a
token's minute also writes when it was last used, and the first of a process reads what it keeps a
while (storage configs, the cluster's capacity, each listed job's spec summary)."""

from __future__ import annotations

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from jobs.models import Job, Task
from tests.factories import create_job, normalized_spec, v2_yaml


def test_it_reads_a_waiting_jobs_detail_in_five_queries(alice, user, default_vc, django_assert_num_queries):
    create_job(user, "waiting")
    alice.get("/api/v2/jobs/alice~waiting")
    # the token, the job with its owner and VC, its tasks with their nodes, its tags, its VC's queue
    with django_assert_num_queries(5):
        assert alice.get("/api/v2/jobs/alice~waiting").status_code == 200


def test_it_reads_a_finished_jobs_detail_in_four_queries(alice, user, default_vc, django_assert_num_queries):
    create_job(user, "done", state="SUCCEEDED", exit_code=0)
    alice.get("/api/v2/jobs/alice~done")
    with django_assert_num_queries(4):  # no queue: it waits no more
        assert alice.get("/api/v2/jobs/alice~done").status_code == 200


@pytest.fixture
def thousand_jobs(user, default_vc):
    spec = normalized_spec("listed", {"worker": 1})
    jobs = Job.objects.bulk_create(
        Job(owner=user, name=f"listed-{number}", virtual_cluster=default_vc, spec=spec) for number in range(1000)
    )
    Task.objects.bulk_create(Task(job=job, role="worker", index=0) for job in jobs)


def test_it_lists_a_thousand_jobs_in_three_queries(alice, thousand_jobs, django_assert_num_queries):
    assert len(alice.get("/api/v2/jobs?limit=1000").json()) == 1000  # (each job's spec summary, read once)
    with django_assert_num_queries(3):  # the token, the page, its tags
        assert len(alice.get("/api/v2/jobs?limit=1000").json()) == 1000


def test_it_counts_the_list_in_one_more_query(alice, thousand_jobs, django_assert_num_queries):
    alice.get("/api/v2/jobs?limit=20")
    with django_assert_num_queries(4):  # the token, the page, its tags, the total
        assert alice.get("/api/v2/jobs?limit=20&withTotalCount=true").json()["totalCount"] == 1000


def submit_queries(client, name: str) -> list[str]:
    with CaptureQueriesContext(connection) as captured:
        response = client.post("/api/v2/jobs", data=v2_yaml(name), content_type="text/yaml")
    assert response.status_code == 202, response.content
    return [query["sql"] for query in captured.captured_queries]


def test_it_submits_a_job_in_seven_queries(alice, default_vc):
    submit_queries(alice, "first")
    # Reads: the token; the VC with the user's access to it and to `crit` (clusters.models.vc_access).
    # The transaction (a savepoint inside the test's own): the job, its task, its event.
    assert len(submit_queries(alice, "counted")) == 7


def test_it_writes_a_submit_in_one_transaction(alice, default_vc):
    submit_queries(alice, "first")
    queries = submit_queries(alice, "atomic")
    writes = [number for number, sql in enumerate(queries) if sql.startswith(("INSERT", "UPDATE", "DELETE"))]
    begins = [number for number, sql in enumerate(queries) if sql.startswith(("SAVEPOINT", "BEGIN"))]
    ends = [number for number, sql in enumerate(queries) if sql.startswith(("RELEASE SAVEPOINT", "COMMIT"))]
    assert len(begins) == len(ends) == 1
    assert begins[0] < min(writes) and max(writes) < ends[0]
