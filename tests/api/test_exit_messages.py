"""The API answers a job's and a task's exit diagnostics as their message (code and parameters)
beside OpenPAI's English fields, which stay as they were (issue 45)."""

import pytest

from jobs import lifecycle
from jobs.models import Job
from jobs.protocol.dependencies import never_reason
from jobs.protocol.exitspec import ExitCode
from tests.factories import create_job

pytestmark = pytest.mark.django_db


def test_it_answers_the_diagnostics_code_and_params_beside_the_english(alice, user, default_vc):
    job = create_job(user, "never")
    lifecycle.refuse(job, ExitCode.CREATE_FRAMEWORK_PERMANENT_FAILED, never_reason("afterok", "alice~prep", "FAILED"))
    answer = alice.get("/api/v2/jobs/alice~never").json()
    status, [task] = answer["jobStatus"], answer["taskRoles"]["worker"]["taskStatuses"]
    [said] = status["appExitDiagnosticsMessages"]
    assert (said["code"], said["params"]) == ("exit.dependency.afterok", {"job": "alice~prep", "state": "FAILED"})
    assert said["message"] == status["appExitDiagnostics"] and status["appExitDiagnostics"].startswith("its dependency")
    assert task["containerExitDiagnosticsMessages"] == [said] and task["containerExitDiagnostics"] == said["message"]


def test_it_answers_null_messages_for_a_row_older_than_its_codes(alice, user, default_vc):
    create_job(user, "old", state="FAILED", exit_code=255, exit_diagnostics="PAIRuntimeUnknownFailed: as it was")
    status = alice.get("/api/v2/jobs/alice~old").json()["jobStatus"]
    assert status["appExitDiagnostics"] == "PAIRuntimeUnknownFailed: as it was"
    assert status["appExitDiagnosticsMessages"] is None
    assert Job.objects.get(name="old").exit_diagnostics_message == {}
