"""The job detail's time limit, time left, queue position and expected start (docs/admin/sharing.md)."""

import pytest
from django.conf import settings

from jobs.models import Job, JobState
from tests.factories import v2_yaml

# The scheduler loop closes old connections each pass: it needs real transactions.
pytestmark = pytest.mark.django_db(transaction=True)


def test_it_shows_the_limit_time_left_queue_position_and_expected_start(
    default_vc, submit_yaml, alice, process_node, scheduler
):
    limited = v2_yaml("runs", "sleep 305.1", cpu=8, extra="extras:\n  maxRunTimeMinutes: 30\n")
    assert submit_yaml(limited).status_code == 202
    assert submit_yaml(v2_yaml("waits", "sleep 305.2", cpu=8)).status_code == 202
    assert submit_yaml(v2_yaml("waits-too", "sleep 305.3", cpu=8)).status_code == 202
    scheduler.run_once()
    running = alice.get("/api/v2/jobs/alice~runs").json()["jobStatus"]
    assert running["state"] == "RUNNING"
    assert running["maxRunTimeSeconds"] == 1800 and 1790 <= running["timeLeftSeconds"] <= 1800
    assert running["queuePosition"] is None
    launched_at = Job.objects.get(name="runs").launched_at
    assert launched_at is not None
    launched = launched_at.timestamp()
    first = alice.get("/api/v2/jobs/alice~waits").json()["jobStatus"]
    assert (first["state"], first["queuePosition"]) == (JobState.WAITING, 1)
    # (its limit, then the grace an ending at the limit gives it)
    assert abs(first["expectedStartTime"] / 1000 - (launched + 1800 + settings.PAI_GRACE_SECONDS)) < 2
    assert first["maxRunTimeSeconds"] is None and first["timeLeftSeconds"] is None
    assert first["expectedStartMessage"]["code"] == "queue.expected_start"  # (an estimate, and on what it rests)
    listed = alice.get("/api/v2/jobs").json()
    rows = {row["name"]: row for row in (listed if isinstance(listed, list) else listed["jobs"])}
    assert rows["waits"]["expectedStartTime"] == first["expectedStartTime"]
    assert rows["runs"]["expectedStartTime"] is None
    # Behind a job with no time limit, the expected start is unknown.
    second = alice.get("/api/v2/jobs/alice~waits-too").json()["jobStatus"]
    assert (second["queuePosition"], second["expectedStartTime"]) == (2, None)
    # Why each waits: the English, and each part's code, parameters and English beside it.
    assert first["pendingReasonMessages"][0]["code"] == "reason.largest_free.cpu"
    assert "; ".join(part["message"] for part in first["pendingReasonMessages"]) == first["pendingReason"]
    [behind] = second["pendingReasonMessages"]
    assert (behind["code"], behind["params"]["job"]) == ("reason.waiting_behind.fifo", "alice~waits")
    assert behind["message"].startswith("waiting behind job alice~waits, first in VC")
    assert running["pendingReason"] is None and running["pendingReasonMessages"] is None


def test_it_refuses_a_time_limit_over_the_vcs_maximum_naming_the_field(default_vc, submit_yaml):
    default_vc.max_run_minutes = 60
    default_vc.save(update_fields=["max_run_minutes"])
    response = submit_yaml(v2_yaml("too-long", extra="extras:\n  maxRunTimeMinutes: 120\n"))
    assert response.status_code == 400
    body = response.json()
    assert body["code"] == "InvalidProtocolError"
    assert "extras.maxRunTimeMinutes: asks for 2 h; its virtual cluster allows at most 1 h" in body["message"]
