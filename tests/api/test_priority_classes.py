"""Priority classes at submit and while a job waits: the VC's default and highest class, who may
use `crit`, refusals naming the field; the class shown as OpenPAI's `jobPriority`."""

import pytest

from clusters.models import VirtualCluster
from jobs.models import Job, JobEvent, JobState
from tests.factories import v2_yaml

pytestmark = pytest.mark.django_db

HIVED = "extras:\n  hivedScheduler:\n    jobPriorityClass: {}\n"


def test_it_gives_a_job_naming_no_class_its_vcs_default(submit_yaml, default_vc):
    VirtualCluster.objects.filter(pk=default_vc.pk).update(default_priority_class="oppo")
    assert submit_yaml(v2_yaml("plain")).status_code == 202
    job = Job.objects.get(name="plain")
    assert (job.priority_class, job.priority) == ("oppo", -1)


def test_it_takes_v2s_top_level_job_priority_class(submit_yaml, default_vc):
    assert submit_yaml(v2_yaml("top", extra="jobPriorityClass: prod\n")).status_code == 202
    job = Job.objects.get(name="top")
    assert (job.priority_class, job.priority) == ("prod", 100)
    assert job.normalized["extras"]["hivedScheduler"]["jobPriorityClass"] == "prod"


def test_it_refuses_a_class_above_the_vcs_highest_naming_the_field(submit_yaml, default_vc):
    VirtualCluster.objects.filter(pk=default_vc.pk).update(max_priority_class="test")
    response = submit_yaml(v2_yaml("urgent") + HIVED.format("prod"))
    assert response.status_code == 400
    assert response.json()["field"] == "extras.hivedScheduler.jobPriorityClass"
    assert "above the highest class" in response.json()["message"]
    top = submit_yaml(v2_yaml("urgent", extra="jobPriorityClass: prod\n"))
    assert (top.status_code, top.json()["field"]) == (400, "jobPriorityClass")


def test_it_lets_only_admins_and_named_users_use_crit(submit_yaml, default_vc, user, root):
    refused = submit_yaml(v2_yaml("crit1") + HIVED.format("crit"))
    assert refused.status_code == 400
    assert refused.json()["field"] == "extras.hivedScheduler.jobPriorityClass"
    assert submit_yaml(v2_yaml("crit2") + HIVED.format("crit"), root).status_code == 202
    default_vc.crit_users.add(user)
    assert submit_yaml(v2_yaml("crit3") + HIVED.format("crit")).status_code == 202


def test_it_refuses_a_grace_period_over_the_cap(submit_yaml, default_vc, settings):
    settings.PAI_MAX_GRACE_SECONDS = 60
    response = submit_yaml(v2_yaml("slow") + "extras:\n  gracePeriodSeconds: 61\n")
    assert (response.status_code, response.json()["field"]) == (400, "extras.gracePeriodSeconds")


def test_it_changes_a_waiting_jobs_class(submit_yaml, default_vc, alice):
    assert submit_yaml(v2_yaml("later")).status_code == 202
    response = alice.put("/api/v2/jobs/alice~later/jobPriority", {"value": "prod"}, format="json")
    assert response.status_code == 200, response.json()
    job = Job.objects.get(name="later")
    assert (job.priority_class, job.priority) == ("prod", 100)
    assert alice.get("/api/v2/jobs/alice~later").json()["jobPriority"] == "prod"
    assert JobEvent.objects.filter(job=job, kind="priority-changed").exists()


def test_it_refuses_a_class_change_naming_the_field(submit_yaml, default_vc, alice):
    assert submit_yaml(v2_yaml("later")).status_code == 202
    response = alice.put("/api/v2/jobs/alice~later/jobPriority", {"value": "crit"}, format="json")
    assert (response.status_code, response.json()["field"]) == (400, "jobPriorityClass")
    unknown = alice.put("/api/v2/jobs/alice~later/jobPriority", {"value": "urgent"}, format="json")
    assert (unknown.status_code, unknown.json()["field"]) == (400, "jobPriorityClass")


def test_it_refuses_a_class_change_once_the_job_runs(submit_yaml, default_vc, alice):
    assert submit_yaml(v2_yaml("running")).status_code == 202
    Job.objects.filter(name="running").update(state=JobState.RUNNING)
    response = alice.put("/api/v2/jobs/alice~running/jobPriority", {"value": "prod"}, format="json")
    assert response.status_code == 400
    assert "only while the job waits" in response.json()["message"]


def test_it_sets_a_vcs_classes_from_createvc(default_vc, user):
    from django.core.management import call_command

    call_command(
        "createvc",
        "default",
        "--share",
        "100",
        "--default-class",
        "oppo",
        "--max-class",
        "prod",
        "--crit-users",
        "alice",
    )
    default_vc.refresh_from_db()
    assert (default_vc.default_priority_class, default_vc.max_priority_class) == ("oppo", "prod")
    assert list(default_vc.crit_users.all()) == [user]
