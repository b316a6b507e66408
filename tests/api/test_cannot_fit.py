"""A job that can never fit its VC is accepted (OpenPAI's clients expect 202/201 for a valid
config) with a `warning` naming the field to change and why (issue 36)."""

import json

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from clusters.models import Node
from tests.factories import v1_json, v2_yaml

pytestmark = pytest.mark.django_db


@pytest.fixture
def small_node(default_vc) -> Node:
    return Node.objects.create(name="small", address="10.0.0.9", cpus=2, memory_mb=4096)


def test_it_warns_in_the_v2_submit_answer_that_a_job_can_never_fit(submit_yaml, small_node):
    response = submit_yaml(v2_yaml("huge", cpu=64))
    assert response.status_code == 202
    assert response.json()["warning"] == {
        "code": "JobCannotFitWarning",
        "field": "taskRoles.worker.resourcePerInstance.cpu",
        "message": 'This job can never run on the cluster as it is: VC "default" quota is 2 CPUs in all, '
        "job needs 64 (it can never fit). Stop it, or submit it again asking for less.",
        "reasonMessages": [
            {
                "code": "reason.never_fits",
                "params": {
                    "why": {"code": "reason.quota_in_all.cpu", "params": {"vc": "default", "limit": 2, "need": 64}}
                },
                "message": 'VC "default" quota is 2 CPUs in all, job needs 64 (it can never fit)',
            }
        ],
    }


def test_it_gives_no_warning_for_a_job_that_fits(submit_yaml, small_node):
    response = submit_yaml(v2_yaml("small"))
    assert response.status_code == 202
    assert "warning" not in response.json()


def test_it_names_the_memory_field_of_a_job_bigger_than_its_vc(submit_yaml, small_node):
    response = submit_yaml(v2_yaml("greedy", memory_mb=65536))
    assert response.json()["warning"]["field"] == "taskRoles.worker.resourcePerInstance.memoryMB"


def test_it_warns_in_the_v1_submit_answer_that_a_job_can_never_fit(alice, small_node):
    body = json.loads(v1_json("huge-v1"))
    body["taskRoles"][0]["cpuNumber"] = 64
    response = alice.post("/api/v1/jobs", data=json.dumps(body), content_type="application/json")
    assert response.status_code == 201
    assert response.json()["warning"]["field"] == "taskRoles[0].cpuNumber"


@pytest.fixture
def two_roles(user, default_vc):
    """A job whose second role asks the most of everything (the field named is that role's)."""
    from jobs.actions import submit_job

    config = v2_yaml("two", cpu=1).replace(
        "taskRoles:\n",
        "taskRoles:\n  big:\n    dockerImage: image\n    resourcePerInstance: "
        "{cpu: 8, memoryMB: 8192, gpu: 2, ports: {http: 3}}\n    commands: [echo]\n",
    )
    return submit_job(user, config)


@pytest.mark.parametrize(
    ("code", "field"),
    [
        ("reason.unknown_vc", "defaults.virtualCluster"),
        ("reason.quota_in_all.gpu", "taskRoles.big.resourcePerInstance.gpu"),
        ("reason.largest_node.cpu", "taskRoles.big.resourcePerInstance.cpu"),
        ("reason.quota_in_all.memory", "taskRoles.big.resourcePerInstance.memoryMB"),
        ("reason.largest_node.ports", "taskRoles.big.resourcePerInstance.ports"),
        ("reason.no_tasks", None),
    ],
)
def test_it_names_the_field_by_the_reasons_code_not_its_words(two_roles, code, field):
    """(Wrapped as placement says it: `... (it can never fit)`.)"""
    from catalogue import Message
    from web.api.views.common import _cannot_fit_field

    reason = Message("reason.never_fits", {"why": Message(code, {})})
    assert _cannot_fit_field(two_roles, [reason]) == field


def test_it_judges_a_job_by_the_cluster_s_size_without_reading_what_runs(submit_yaml, small_node):
    """Whether a job can ever fit depends on the nodes and the VCs' quotas, not on what runs now:
    the check read every running task and its job's spec on each submit (issue 49)."""
    with CaptureQueriesContext(connection) as queries:
        response = submit_yaml(v2_yaml("huge", cpu=64))
    assert response.json()["warning"]["field"] == "taskRoles.worker.resourcePerInstance.cpu"
    task_reads = [
        q["sql"] for q in queries.captured_queries if q["sql"].startswith("SELECT") and "jobs_task" in q["sql"]
    ]
    assert task_reads == []
