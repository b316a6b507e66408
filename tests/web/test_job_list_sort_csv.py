"""The job list sorted by every column on the server, with its filters kept (issue 36); the list and
a job's task table as CSV, safe to open in a spreadsheet; per-task log links in the task table."""

from __future__ import annotations

import csv
import io
from datetime import timedelta

import pytest
from django.db import connection
from django.utils import timezone

from clusters.models import VirtualCluster
from tests.factories import create_jobs
from web.csv_export import PAGE_ROWS, safe_cell
from web.job_list import SORT_COLUMNS

pytestmark = pytest.mark.django_db


@pytest.fixture
def three_jobs(user, make_job):
    now = timezone.now()
    research = VirtualCluster.objects.create(name="research")
    return [
        make_job(user, "b-mid", "RUNNING", roles={"worker": 2}, gpu_count=2, retries_used=1,
                 launched_at=now - timedelta(minutes=5)),
        make_job(user, "a-small", "WAITING", gpu_count=0, pending_reason="waiting for 1 GPU",
                 virtual_cluster=research),
        make_job(user, "c-big", "SUCCEEDED", roles={"worker": 3}, gpu_count=8, retries_used=3,
                 launched_at=now - timedelta(hours=2), completed_at=now - timedelta(hours=1)),
    ]  # fmt: skip


def names(client, query):
    return [job.name for job in client.get(f"/?{query}").context["page"].jobs]


@pytest.mark.parametrize(
    ("sort", "expected"),
    [
        ("state", ["b-mid", "c-big", "a-small"]),
        ("vc", ["b-mid", "c-big", "a-small"]),
        ("-tasks", ["c-big", "b-mid", "a-small"]),
        ("gpus", ["a-small", "b-mid", "c-big"]),
        ("-gpus", ["c-big", "b-mid", "a-small"]),
        ("-duration", ["c-big", "b-mid", "a-small"]),  # never launched: last either way
        ("duration", ["b-mid", "c-big", "a-small"]),
        ("-retries", ["c-big", "b-mid", "a-small"]),
        ("-why", ["a-small", "c-big", "b-mid"]),
        ("user", ["b-mid", "a-small", "c-big"]),  # one owner: then by id
    ],
)
def test_it_sorts_by_every_column(alice_client, three_jobs, sort, expected):
    assert names(alice_client, f"sort={sort}") == expected


def test_it_sorts_waiting_jobs_by_expected_start_and_says_which_have_none(alice_client, user, make_job):
    now = timezone.now()
    make_job(user, "later", expected_start_at=now + timedelta(hours=2))
    make_job(user, "unknown")
    make_job(user, "sooner", expected_start_at=now + timedelta(hours=1))
    assert names(alice_client, "sort=expected") == ["sooner", "later", "unknown"]
    page = alice_client.get("/?sort=expected").content.decode()
    cells = page.split('class="when expected-start"')[1:]
    assert "(an estimate from recent jobs" in cells[0]
    assert 'title="no expected start: a job it waits for has no time limit' in cells[2] and ">unknown<" in cells[2]


def test_every_column_has_a_sort_link_keeping_the_filters(alice_client, three_jobs):
    page = alice_client.get("/?state=RUNNING&q=b-&sort=gpus")
    links = page.context["query"].sort_links()
    assert set(links) == set(SORT_COLUMNS)
    assert all("state=RUNNING" in link and "q=b-" in link for link in links.values())
    assert "sort=-gpus" in links["gpus"]  # clicking the sorted column reverses it
    assert 'aria-sort="ascending"' in page.content.decode()


def test_an_unknown_sort_falls_back_to_newest_first(alice_client, three_jobs):
    assert names(alice_client, "sort=secrets_encrypted") == ["c-big", "a-small", "b-mid"]


def read_csv(response):
    assert response["Content-Type"].startswith("text/csv")
    assert response["Content-Disposition"].startswith("attachment;")
    return list(csv.reader(io.StringIO(b"".join(response.streaming_content).decode("utf-8-sig"))))


def test_it_downloads_the_filtered_list_in_its_order_as_csv(alice_client, three_jobs):
    rows = read_csv(alice_client.get("/jobs/jobs.csv?sort=-gpus&q=-"))
    assert rows[0][:6] == ["Name", "User", "State", "Virtual cluster", "Tasks", "GPUs"]
    assert [row[0] for row in rows[1:]] == ["c-big", "b-mid", "a-small"]
    assert rows[1][4] == "3"  # c-big's three tasks
    assert rows[3][-1] == "waiting for 1 GPU"


def test_the_list_csv_holds_only_the_jobs_the_list_shows(alice_client, three_jobs, other_user, make_job, settings):
    settings.PAI_SHARED_JOB_LIST = False
    make_job(other_user, "bobs")
    assert "bobs" not in {row[0] for row in read_csv(alice_client.get("/jobs/jobs.csv"))}


@pytest.mark.parametrize("text", ['=HYPERLINK("http://x")', "+1+2", "-2+3", "@SUM(A1)", "\tx", "\rx"])
def test_a_cell_that_a_spreadsheet_would_run_is_defused(text):
    assert safe_cell(text) == "'" + text


def test_a_plain_cell_stays_as_it_is():
    assert (safe_cell("resnet-50"), safe_cell(None), safe_cell(3)) == ("resnet-50", "", "3")


def test_a_job_named_like_a_formula_is_defused_in_the_csv(alice_client, user, make_job):
    make_job(user, "-cmd")
    assert read_csv(alice_client.get("/jobs/jobs.csv"))[1][0] == "'-cmd"


def test_it_downloads_the_task_table_as_csv(alice_client, user, make_job):
    job = make_job(user, "pair", "RUNNING", roles={"ps": 1, "worker": 2})
    job.tasks.filter(role="worker", index=1).update(state="FAILED", exit_code=137, ip="10.0.0.9")
    response = alice_client.get(f"/jobs/{job.full_name}/tasks.csv")
    assert response["Content-Disposition"] == 'attachment; filename="alice-pair-tasks.csv"'
    rows = read_csv(response)
    assert rows[0][:4] == ["Role", "Index", "State", "Node"]
    assert [row[:3] for row in rows[1:]] == [
        ["ps", "0", "WAITING"],
        ["worker", "0", "WAITING"],
        ["worker", "1", "FAILED"],
    ]
    assert rows[3][4] == "10.0.0.9" and rows[3][9] == "137"


def test_the_task_csv_of_a_job_the_user_may_not_see_is_404(bob_client, user, make_job, settings):
    settings.PAI_SHARED_JOB_LIST = False
    job = make_job(user, "private")
    assert bob_client.get(f"/jobs/{job.full_name}/tasks.csv").status_code == 404


def test_the_task_table_links_each_tasks_log(alice_client, user, make_job):
    job = make_job(user, "logs", "RUNNING", roles={"worker": 2})
    page = alice_client.get(f"/jobs/{job.full_name}/").content.decode()
    for task in job.tasks.all():
        assert f'data-log-link="task:{task.pk}"' in page
        assert f"/log/download?log=task:{task.pk}" in page
    assert f"/jobs/{job.full_name}/tasks.csv" in page


@pytest.mark.django_db(transaction=True)
def test_the_csv_holds_no_database_cursor_between_its_lines(alice_client, user):
    """The served portal resumes a streamed answer on whichever piece thread is free
    (pai_portal/serving.py): the thread that began it may close its connection meanwhile."""
    create_jobs(user, [f"job-{number:04d}" for number in range(PAGE_ROWS + 20)])
    lines = []
    for line in alice_client.get("/jobs/jobs.csv").streaming_content:
        lines.append(line)
        connection.close()
    assert len(lines) == 1 + PAGE_ROWS + 20
